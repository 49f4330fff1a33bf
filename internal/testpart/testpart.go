// Package testpart is for tests that need a real part from outside Go: a
// program (node, chromium, curl, redis-server) or installed packages
// (node_modules). When the part is missing, Missing fails the test under
// CI=true, where .ci/run installs every part, and otherwise skips it with a
// one-line notice that a plain `go test ./...` shows too.
//
// `go test` in package-list mode throws away a passing package's output, so
// a t.Skip message alone is seen only under -v. Missing therefore also
// writes its notice to the standard error of the go command that started the
// test binary (through /proc on Linux, when that is a terminal or a pipe; a
// regular file would get the notice overwritten, so then only -v shows
// it), and touches a file the test then
// opens (.testpart-stamp in the package directory, ignored by git), so that
// the go command does not cache the result and a rerun prints the notice
// again rather than "(cached)".
package testpart

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// InCI reports whether the tests run under CI (CI=true), where every part
// must be present.
func InCI() bool { return os.Getenv("CI") == "true" }

// Missing stops t because the part it needs is missing: a failure under
// CI=true, otherwise a skip announced by one line. reason says what is
// missing and how to get it, for example
// "node is not on PATH; install Node.js 20+ and run npm ci in interop/mcp".
func Missing(t testing.TB, reason string) {
	t.Helper()
	if InCI() {
		t.Fatalf("CI=true and a part this test needs is missing: %s", reason)
	}
	line := fmt.Sprintf("SKIP %s%s: %s (under CI=true this fails)\n", packageDir(), t.Name(), reason)
	announce(line)
	defeatCache()
	t.Skip(strings.TrimSuffix(line, "\n"))
}

// packageDir returns the test's directory relative to the module root,
// with a trailing space, or "" if it cannot tell.
func packageDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			rel, err := filepath.Rel(dir, wd)
			if err != nil {
				return ""
			}
			return filepath.ToSlash(rel) + " "
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// announce writes line where a person running `go test` sees it.
func announce(line string) {
	if w := goCommandStderr(); w != nil {
		defer w.Close()
		if _, err := w.WriteString(line); err == nil {
			return
		}
	}
	// Not started by the go command (a test binary run by hand, or
	// -exec): the binary's own stderr is the terminal.
	fmt.Fprint(os.Stderr, line)
}

// goCommandStderr opens the standard error of the parent process when that
// parent is the go command, or returns nil.
func goCommandStderr() *os.File {
	ppid := strconv.Itoa(os.Getppid())
	exe, err := os.Readlink(filepath.Join("/proc", ppid, "exe"))
	if err != nil || !strings.HasPrefix(filepath.Base(exe), "go") {
		return nil
	}
	name := filepath.Join("/proc", ppid, "fd", "2")
	// Reopening a regular file gives a second offset, and the go
	// command's own later writes would overwrite the notice; a terminal
	// or a pipe (a CI log) keeps both in order.
	if fi, err := os.Stat(name); err != nil || fi.Mode().IsRegular() {
		return nil
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil
	}
	return f
}

// stampFile is written into the test's package directory (it is in
// .gitignore): the go command rechecks only files inside the module.
const stampFile = ".testpart-stamp"

// defeatCache writes a file and opens it from the test: the go command does
// not cache a test result that depends on a file modified moments ago, so
// the next `go test` runs the test again and repeats the notice. In a
// read-only directory the write fails and a rerun may say "(cached)".
func defeatCache() {
	name := stampFile
	if err := os.WriteFile(name, []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return
	}
	if f, err := os.Open(name); err == nil {
		f.Close()
	}
}
