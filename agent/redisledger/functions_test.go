package redisledger

import (
	"context"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/agent"
	"github.com/redis/go-redis/v9"
)

// calls returns how many times Redis ran cmd (fcall, evalsha, eval).
func calls(t *testing.T, p *redisProc, cmd string) int {
	t.Helper()
	info, err := p.client(t).Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":calls="); ok {
			n := 0
			for _, c := range v {
				if c < '0' || c > '9' {
					break
				}
				n = n*10 + int(c-'0')
			}
			return n
		}
	}
	return 0
}

func spendOnce(t *testing.T, s *Store, id string) {
	t.Helper()
	ctx := context.Background()
	if ok, _, err := s.Reserve(ctx, agent.Reservation{ID: id, AmountUSD: "0.1", LimitUSD: "10", Started: true}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if _, err := s.Settle(ctx, id, "0.1", nil); err != nil {
		t.Fatal(err)
	}
}

// TestFunctions: the store runs its code as Redis Functions where it can
// load them, reloads them when the server lost them (FUNCTION FLUSH here;
// a restart without data or a new Cluster node in production), and runs
// scripts when told to or when the server refuses FUNCTION.
func TestFunctions(t *testing.T) {
	ctx := context.Background()
	t.Run("loaded and reloaded", func(t *testing.T) {
		p := startRedis(t)
		s := newStore(t, p, "fn", nil)
		spendOnce(t, s, "a")
		if n := calls(t, p, "fcall"); n < 2 {
			t.Errorf("%d FCALLs for a reservation and a settlement, want 2 or more (with lease renewals)", n)
		}
		if err := p.client(t).FunctionFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		spendOnce(t, s, "b")
		st, err := s.State(ctx)
		if err != nil || st.Balance.SpentUSD != "0.2" {
			t.Errorf("after FUNCTION FLUSH: %+v, %v; want 0.2 spent", st.Balance, err)
		}
		if n := calls(t, p, "evalsha") + calls(t, p, "eval"); n != 0 {
			t.Errorf("%d scripts run while functions could be loaded", n)
		}
	})
	t.Run("NoFunctions", func(t *testing.T) {
		p := startRedis(t)
		s := newStore(t, p, "fn", &Options{NoFunctions: true})
		spendOnce(t, s, "a")
		if n := calls(t, p, "fcall"); n != 0 {
			t.Errorf("%d FCALLs with NoFunctions", n)
		}
		if libs, err := p.client(t).FunctionList(ctx, redis.FunctionListQuery{}).Result(); err != nil || len(libs) != 0 {
			t.Errorf("libraries loaded with NoFunctions: %v, %v", libs, err)
		}
	})
	t.Run("FUNCTION refused", func(t *testing.T) {
		p := startRedis(t, "--rename-command", "FUNCTION", "")
		s := newStore(t, p, "fn", nil)
		spendOnce(t, s, "a")
		if n := calls(t, p, "evalsha") + calls(t, p, "eval"); n < 2 {
			t.Errorf("%d scripts run on a server without FUNCTION, want 2 or more", n)
		}
		st, err := s.State(ctx)
		if err != nil || st.Balance.SpentUSD != "0.1" {
			t.Errorf("%+v, %v; want 0.1 spent", st.Balance, err)
		}
	})
}
