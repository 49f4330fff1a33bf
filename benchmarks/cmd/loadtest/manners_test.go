package main

import (
	"os"
	"testing"

	"github.com/agentpreflight/preflight/benchmarks/internal/cli/clitest"
)

// TestMain lets clitest run this test binary as loadtest itself.
func TestMain(m *testing.M) {
	clitest.Hook(main)
	os.Exit(m.Run())
}

func TestHelpAndBadFlag(t *testing.T) {
	clitest.CheckManners(t, "loadtest", "duration", "requests", "clients", "warmup", "bin", "out")
}
