package redisledger

import (
	"context"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent"
)

// TestDeadlineOnStalledRedis: with the client the README recommends
// (ContextTimeoutEnabled), a call's context deadline bounds its wait on a
// Redis that does not answer; without it go-redis would wait for its own
// ReadTimeout (here 2 s, 3 s by default). The call is not made.
func TestDeadlineOnStalledRedis(t *testing.T) {
	p := startRedis(t, "--enable-debug-command", "yes")
	s := newStore(t, p, "stalled", nil)
	g, err := agent.NewGuard(nil, &agent.GuardOptions{Store: s, BudgetUSD: "1"})
	if err != nil {
		t.Fatal(err)
	}
	stall := exec.Command(redisCLIPath, "-p", strconv.Itoa(p.port), "DEBUG", "SLEEP", "5")
	if err := stall.Start(); err != nil {
		t.Fatal(err)
	}
	// redis-cli ends with the stall, or when the server is killed.
	go func() { _ = stall.Wait() }()
	time.Sleep(200 * time.Millisecond) // the stall has begun
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	ran := false
	start := time.Now()
	_, err = g.Call(ctx, searchRequest("q", "0.01", false), func(context.Context) (agent.Result, error) {
		ran = true
		return agent.Result{}, nil
	})
	took := time.Since(start)
	if ran || err == nil {
		t.Errorf("on a stalled Redis: ran %v, error %v; want not run and an error", ran, err)
	}
	// Not a timing claim: the point is which of two limits ended the
	// wait, the 300 ms deadline or the client's 2 s ReadTimeout.
	if took >= time.Second {
		t.Errorf("Call with a 300 ms deadline returned after %v: the deadline was ignored", took.Round(time.Millisecond))
	}
}
