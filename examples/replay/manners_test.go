package main

import (
	"os"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/internal/cli/clitest"
)

// TestMain lets clitest run this test binary as replay itself.
func TestMain(m *testing.M) {
	clitest.Hook(main)
	os.Exit(m.Run())
}

func TestHelpAndBadFlag(t *testing.T) {
	clitest.CheckManners(t, "replay", "f", "budget", "ttl", "retry-cap", "reuse", "reduce-scope", "advise", "v")
	// A missing -f or a bad value is a usage mistake too: exit 2 with the usage line.
	for _, args := range [][]string{nil, {"-f", "-", "-advise", "maybe"}, {"-f", "-", "-retry-cap", "0"}} {
		_, stderr, code := clitest.Run(t, args...)
		if code != 2 || !strings.Contains(stderr, "\nusage: replay -f RUN.jsonl [flags]\n") {
			t.Errorf("replay %q: exit %d, stderr %q; want 2 and the usage line", args, code, stderr)
		}
	}
}
