package adapt_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/tools"
)

// TestCancelledLeader: an identical read-only call waiting on a call
// whose context is cancelled while it runs is not handed the cut-short
// result: it decides again and runs itself, with its own live context.
func TestCancelledLeader(t *testing.T) {
	store := agenttest.NewArrivals()
	s, _, err := adapt.NewSession(&adapt.Options{BudgetUSD: "1", LedgerStore: store,
		Specs: []tools.Spec{{Operation: preflight.Operation{Name: "quote", Effects: preflight.EffectsReadOnly}, PriceUSD: "0.10"}}})
	if err != nil {
		t.Fatal(err)
	}
	args := json.RawMessage(`{"symbol":"A"}`)
	var runs atomic.Int32
	lctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	leader := make(chan tools.Answer)
	go func() {
		ans, _, _ := adapt.Call(lctx, s, nil, "quote", args, func(ctx context.Context) ([]byte, error) {
			runs.Add(1)
			store.Wait(2, 10*time.Second) // the follower waits on this call
			cancel()
			return []byte(`{"price":"cut short"}`), nil
		})
		leader <- ans
	}()
	store.Wait(1, 10*time.Second)
	ans, w, err := adapt.Call(context.Background(), s, nil, "quote", args, func(context.Context) ([]byte, error) {
		runs.Add(1)
		return []byte(`{"price":"1.5"}`), nil
	})
	l := <-leader
	if err != nil || w != nil || runs.Load() != 2 || ans.How != tools.HowRan || string(ans.Result) != `{"price":"1.5"}` {
		t.Fatalf("the follower: %v %s, %v, %v; runs %d; want it run itself", ans.How, ans.Result, w, err, runs.Load())
	}
	if l.How != tools.HowRan || l.Outcome != preflight.OutcomeTransientFailure {
		t.Fatalf("the leader: %v %v, want ran and a transient failure", l.How, l.Outcome)
	}
	if sp, _ := s.Guard().SpentUSD(context.Background()); sp != "0.2" {
		t.Fatalf("spent %s, want both calls counted (0.2)", sp)
	}
}
