// Package testpart is for tests that need a real part from outside Go: a
// program (node, chromium, curl, redis-server) or installed packages
// (node_modules). When the part is missing, Missing fails the test under
// CI=true, where .ci/run installs every part, and otherwise skips it with a
// one-line reason. `go test -v` and `go test -json` list every skip with its
// reason; a plain `go test ./...` reports only the package as ok.
package testpart

import (
	"os"
	"testing"
)

// InCI reports whether the tests run under CI (CI=true), where every part
// must be present.
func InCI() bool { return os.Getenv("CI") == "true" }

// Missing stops t because the part it needs is missing: a failure under
// CI=true, otherwise a skip whose message is reason. reason says what is
// missing and how to get it, for example
// "node is not on PATH; install Node.js 20+ and run npm ci in server/interop/mcp".
func Missing(t testing.TB, reason string) {
	t.Helper()
	if InCI() {
		t.Fatalf("CI=true and a part this test needs is missing: %s", reason)
	}
	t.Skipf("%s (under CI=true this fails)", reason)
}
