package mcpgoguard_test

import (
	"testing"

	"github.com/agentpreflight/preflight/agent/agenttest"
)

// TestReadme: the Go blocks of README.md are excerpts of Example_wiring,
// which go test compiles and runs.
func TestReadme(t *testing.T) {
	agenttest.ExcerptsOf(t, "README.md", "example_wiring_test.go")
}
