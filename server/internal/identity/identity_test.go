package identity

import (
	"context"
	"testing"
)

func TestPrincipal(t *testing.T) {
	ctx := context.Background()
	if got := Principal(ctx); got != Anonymous {
		t.Errorf("Principal of a bare context = %q, want %q", got, Anonymous)
	}
	if got := Principal(WithPrincipal(ctx, "team-a")); got != "team-a" {
		t.Errorf("Principal = %q, want team-a", got)
	}
	if got := Principal(WithPrincipal(ctx, "")); got != Anonymous {
		t.Errorf("an empty principal reads as %q, want %q", got, Anonymous)
	}
}
