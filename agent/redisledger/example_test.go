package redisledger_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
	"github.com/agentpreflight/preflight/agent/redisledger"
	"github.com/redis/go-redis/v9"
)

// Every worker of customer 42's run opens the same scope: they spend one
// 25 USD budget and reuse each other's saved results. (Compiled, not run:
// it needs a Redis at 127.0.0.1:6379; the package tests start their own.)
func ExampleNew() {
	ctx := context.Background()
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs: []string{"127.0.0.1:6379"},
		// Without it go-redis ignores ctx's deadline and waits up to its
		// ReadTimeout (3 s by default) on a slow Redis.
		ContextTimeoutEnabled: true,
	})
	defer rdb.Close()
	const scope = "customer-42/run-7"
	store, err := redisledger.New(rdb, scope, &redisledger.Options{Lease: 15 * time.Second})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	results, err := redisledger.NewResultStore(rdb, scope, &redisledger.ResultOptions{TTL: time.Hour})
	if err != nil {
		panic(err)
	}
	guard, err := agent.NewGuard(nil, &agent.GuardOptions{Store: store, BudgetUSD: "25"})
	if err != nil {
		panic(err)
	}
	req := preflight.ToolCallRequest{ /* the proposed call, as for Decide */ }
	rep, err := guard.Call(ctx, req, func(ctx context.Context) (agent.Completion, error) {
		ref, err := results.Put(ctx, []byte(`{"answer":42}`)) // the tool's result
		return agent.Completion{ResultReference: ref, CostUSD: "0.02"}, err
	})
	if err != nil {
		fmt.Println(err) // wraps agent.ErrStoreUnavailable when Redis is down: not run
		return
	}
	if rep.ReuseReference != "" {
		saved, _ := results.Get(ctx, rep.ReuseReference) // another worker's bytes
		fmt.Printf("%s\n", saved)
	}
	fmt.Println("reserved", rep.ReservedUSD, "settled", rep.SettledUSD, "spent before", rep.Balance.SpentUSD)
}

// An operator brings back a scope that its workers found lost (they
// failed closed with agent.ErrStoreStateLost): with every worker stopped,
// they reconcile what the scope spent from the providers' records and
// give that figure to Recover; workers restarted afterwards spend on from
// it. (Compiled, not run: it needs a Redis at 127.0.0.1:6379.)
func ExampleStore_Recover() {
	ctx := context.Background()
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}, ContextTimeoutEnabled: true})
	defer rdb.Close()
	store, err := redisledger.New(rdb, "customer-42/run-7", nil)
	if err != nil {
		panic(err)
	}
	defer store.Close()
	if _, err := store.State(ctx); errors.Is(err, agent.ErrStoreStateLost) {
		if err := store.Recover(ctx, "17.35"); err != nil { // the reconciled spending
			panic(err)
		}
	}
}

// A fleet on a Redis Cluster (each primary with a replica) that must not
// lose an acknowledged hold or settlement when a primary fails: every
// call waits until one replica has its writes, and fails closed when
// none does in time. (Compiled, not run: it needs a Cluster.)
func ExampleOptions_waitReplicas() {
	ctx := context.Background()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                 []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"},
		ContextTimeoutEnabled: true,
	})
	defer rdb.Close()
	store, err := redisledger.New(rdb, "customer-42/run-7", &redisledger.Options{WaitReplicas: 1, WaitTimeout: 500 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	_, _, err = store.Reserve(ctx, agent.Reservation{ID: "call-1", AmountUSD: "0.02", LimitUSD: "25", Started: true})
	if errors.Is(err, redisledger.ErrNotReplicated) {
		fmt.Println("no replica acknowledged the hold in time: the call is not made")
	}
}
