package main

import (
	"os"
	"testing"

	"github.com/agentpreflight/preflight/internal/cli/clitest"
)

// TestMain lets clitest run this test binary as mcpclient itself.
func TestMain(m *testing.M) {
	clitest.Hook(main)
	os.Exit(m.Run())
}

func TestHelpAndBadFlag(t *testing.T) {
	clitest.CheckManners(t, "mcpclient", "url", "protocol", "timeout")
}
