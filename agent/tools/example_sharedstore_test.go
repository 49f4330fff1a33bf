package tools_test

import (
	"context"
	"fmt"
	"time"

	"github.com/agentpreflight/preflight/agent/tools"
)

// Two sessions share one store, each through a view of its own: the one
// that floods it pays with its own older results, never with the other's
// result still within its TTL. Once full of live results of others, a
// save is refused (that result is then simply not reusable).
func ExampleSharedResultStore() {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	store := tools.NewSharedResultStore(&tools.SharedResultStoreOptions{
		MaxEntries: 4, OwnerEntries: 3,
		Now: func() time.Time { return now },
	})
	alice, bob := store.View(), store.View()
	defer bob.Close()

	ref, _ := alice.PutTTL(ctx, []byte("quote ACME: 101.25"), time.Minute)
	for i := range 10 {
		bob.PutTTL(ctx, fmt.Appendf(nil, "quote B%d", i), time.Minute)
	}
	b, ok := alice.Get(ctx, ref)
	fmt.Printf("alice after bob's flood: %q %v\n", b, ok)
	entries, _ := bob.Len()
	fmt.Println("bob holds", entries, "(his quota)")

	carol := store.View()
	_, err := carol.PutTTL(ctx, []byte("x"), time.Minute)
	fmt.Println("carol, store full of live results:", err)

	now = now.Add(2 * time.Minute) // alice's result is past its TTL: it may go
	_, err = carol.PutTTL(ctx, []byte("x"), time.Minute)
	fmt.Println("carol, two minutes later:", err)

	alice.Close() // a session that ends drops its results
	carol.Close()
	entries, bytes := store.Len()
	fmt.Println("store:", entries, "entries,", bytes, "bytes")
	// Output:
	// alice after bob's flood: "quote ACME: 101.25" true
	// bob holds 3 (his quota)
	// carol, store full of live results: tools: result store full of other sessions' live results
	// carol, two minutes later: <nil>
	// store: 3 entries, 24 bytes
}
