package leases_test

import (
	"context"
	"fmt"
	"time"

	"github.com/agentpreflight/preflight/agent/leases"
)

// A store keeps the leases of its process's reservations alive with a
// Keeper: Hold before asking the store for the hold, Drop when the
// reservation ends.
func ExampleKeeper() {
	renewed := make(chan []string, 1)
	k := leases.New(func(ctx context.Context, lease time.Duration, ids []string) error {
		// A real store extends the leases of ids to now+lease here.
		select {
		case renewed <- ids:
		default:
		}
		return nil
	}, leases.Options{Lease: 30 * time.Millisecond})
	defer k.Close()

	k.Hold("call-1", 30*time.Millisecond)
	fmt.Println("renewed", <-renewed)
	k.Drop("call-1")
	fmt.Println("still held:", k.Holds("call-1"))
	// Output:
	// renewed [call-1]
	// still held: false
}
