package mcpgoguard

import (
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/agent/adapt"
)

// InterruptOnDefer asks for something this framework cannot do: New says
// so instead of ignoring it.
func TestInterruptOnDeferRefused(t *testing.T) {
	_, err := New(&adapt.Options{InterruptOnDefer: true})
	if err == nil || !strings.Contains(err.Error(), "InterruptOnDefer is not supported") {
		t.Fatalf("New(InterruptOnDefer) = %v, want a refusal", err)
	}
}
