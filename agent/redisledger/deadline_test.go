package redisledger

import (
	"context"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent"
)

// TestDeadlineOnStalledRedis: a call's context deadline bounds its wait on
// a Redis that does not answer, whether the call itself waits on Redis or
// waits behind another call of its Guard that does (that one has no
// deadline). The clients are built as the README says, with
// ContextTimeoutEnabled: without it go-redis waits for its own ReadTimeout
// (here 2 s, 3 s by default). The call is not made.
func TestDeadlineOnStalledRedis(t *testing.T) {
	for _, tt := range []struct {
		name   string
		behind bool // another call without a deadline is stuck on Redis first
	}{
		{"alone", false},
		{"behind a call stuck on Redis", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
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
			ran := make(chan bool, 2)
			call := func(ctx context.Context, q string) error {
				_, err := g.Call(ctx, searchRequest(q, "0.01", false), func(context.Context) (agent.Completion, error) {
					ran <- true
					return agent.Completion{}, nil
				})
				return err
			}
			if tt.behind {
				go func() { _ = call(context.Background(), "first") }()
				time.Sleep(50 * time.Millisecond)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			start := time.Now()
			err = call(ctx, "q")
			took := time.Since(start)
			if err == nil || len(ran) > 0 {
				t.Errorf("on a stalled Redis: error %v, ran %v; want not run and an error", err, len(ran) > 0)
			}
			// Not a timing claim: the point is which limit ended the wait,
			// the 300 ms deadline or the 2 s ReadTimeout.
			if took >= time.Second {
				t.Errorf("Call with a 300 ms deadline returned after %v: the deadline was not kept", took.Round(time.Millisecond))
			}
		})
	}
}
