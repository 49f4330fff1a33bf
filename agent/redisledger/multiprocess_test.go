package redisledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent"
	"github.com/redis/go-redis/v9"
)

// fleet is a multi-process run: its workers' reports, summed.
type fleet struct {
	workerReport
	workers    int
	goroutines int // calls in flight per worker at most
	duration   time.Duration
}

// runFleet starts workers processes of goroutines each, calls calls per
// goroutine, against budget in scope; during (if non-nil) runs while they
// work. It returns when every worker exited.
func runFleet(t *testing.T, addrs []string, cluster bool, scope, budget string, workers, goroutines, calls int, during func()) fleet {
	return runFleetLease(t, addrs, cluster, scope, budget, workers, goroutines, calls, 0, during)
}

// runFleetLease is runFleet with the workers' lease; more changes the
// workers' configuration further.
func runFleetLease(t *testing.T, addrs []string, cluster bool, scope, budget string, workers, goroutines, calls int, lease time.Duration, during func(), more ...func(*workerConfig)) fleet {
	t.Helper()
	dir := t.TempDir()
	start := time.Now()
	var outs []string
	var cmds = make([]interface{ Wait() error }, 0, workers)
	for i := range workers {
		out := filepath.Join(dir, fmt.Sprintf("worker-%d.json", i))
		outs = append(outs, out)
		cfg := workerConfig{Index: i, Addrs: addrs, Cluster: cluster, Scope: scope, BudgetUSD: budget, Goroutines: goroutines, Calls: calls, Lease: lease, Out: out}
		for _, m := range more {
			m(&cfg)
		}
		cmds = append(cmds, startWorker(t, cfg))
	}
	if during != nil {
		during()
	}
	f := fleet{workers: workers, goroutines: goroutines}
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("worker %d: %v", i, err)
		}
		r := readReport(t, outs[i])
		f.Ran = append(f.Ran, r.Ran...)
		f.Deferred += r.Deferred
		f.Reused += r.Reused
		f.CrossReused += r.CrossReused
		f.ReuseMissing += r.ReuseMissing
		f.ReuseWrong += r.ReuseWrong
		f.Coalesced += r.Coalesced
		f.Unavailable += r.Unavailable
		f.RanUnplanned += r.RanUnplanned
		f.Other = append(f.Other, r.Other...)
	}
	f.duration = time.Since(start)
	return f
}

// spentOf is the scope's spending as its store reports it.
func spentOf(t *testing.T, s *Store) *big.Rat {
	t.Helper()
	st, err := s.State(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r, ok := new(big.Rat).SetString(string(st.Balance.SpentUSD))
	if !ok {
		t.Fatalf("spent %q", st.Balance.SpentUSD)
	}
	return r
}

// waitSpent returns once the scope has spent percent of budget. A fault
// a test injects after it lands mid-run however fast the machine runs
// the workers, where a fixed sleep could land after they ended.
func waitSpent(t *testing.T, s *Store, budget string, percent int64) {
	t.Helper()
	at, _ := new(big.Rat).SetString(budget)
	at.Mul(at, big.NewRat(percent, 100))
	for deadline := time.Now().Add(time.Minute); spentOf(t, s).Cmp(at) < 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the workers had not spent %d %% of the budget %s after a minute", percent, budget)
		}
	}
}

// sumUSD adds decimal texts exactly.
func sumUSD(t *testing.T, calls []ranCall) *big.Rat {
	total := new(big.Rat)
	for _, c := range calls {
		r, ok := new(big.Rat).SetString(c.CostUSD)
		if !ok {
			t.Fatalf("cost %q", c.CostUSD)
		}
		total.Add(total, r)
	}
	return total
}

// maxEstimateUSD is the largest estimate a fleet worker gives a call
// (worker_test.go draws them up to 0.5 USD).
var maxEstimateUSD = big.NewRat(1, 2)

// failover is what a run's failover may lose.
type failover int

const (
	noFailover failover = iota
	// failoverAsync: replication is asynchronous; acknowledged holds and
	// settlements may be lost, and the scope found lost.
	failoverAsync
	// failoverWaited: the workers wait for a replica after every call
	// (Options.WaitReplicas): nothing acknowledged is lost.
	failoverWaited
)

// check verifies the invariants of a run against what Redis holds. With
// failoverAsync (a failover to an asynchronous replica), acknowledged
// settlements and holds may be missing from Redis, never counted twice;
// the loss is logged and bounded. With failoverWaited nothing
// acknowledged may be missing and nothing may pass the budget; with
// either, calls that failed closed may have had their started holds
// charged at their estimates.
func (f fleet) check(t *testing.T, c redis.UniversalClient, scope, budget string, fo failover) {
	mayLose := fo == failoverAsync
	t.Helper()
	ctx := context.Background()
	s, err := New(c, scope, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := s.State(ctx)
	if err != nil {
		// A failover that lost writes some worker had seen: the scope is
		// marked lost and every worker fails closed from then on. Its
		// money is read past the scripts.
		if !mayLose || !errors.Is(err, agent.ErrStoreStateLost) {
			t.Fatal(err)
		}
		t.Logf("the scope was found lost after the failover: %v", err)
		raw, _ := rawMoney(t, c, s)
		st.Balance = agent.Balance{SpentUSD: json.Number(raw.FloatString(18)), ReservedUSD: "0"}
	}
	spent, _ := new(big.Rat).SetString(string(st.Balance.SpentUSD))
	limit, _ := new(big.Rat).SetString(budget)
	ran := sumUSD(t, f.Ran)
	total := len(f.Ran) + f.Deferred + f.Reused + f.ReuseMissing + f.ReuseWrong + f.Coalesced + f.Unavailable + len(f.Other)
	t.Logf("%d workers, %d calls in %v (%.0f calls/s): ran %d, deferred %d, reused %d (%d from another process), coalesced %d, failed closed %d; spent %s of %s (Redis), %s reported by workers",
		f.workers, total, f.duration.Round(time.Millisecond), float64(total)/f.duration.Seconds(), len(f.Ran), f.Deferred, f.Reused, f.CrossReused, f.Coalesced, f.Unavailable,
		st.Balance.SpentUSD, budget, ran.FloatString(9))
	// A failover can lose writes the old primary acknowledged (replication
	// is asynchronous): settlements, whose costs then go uncounted, and
	// holds, whose money other calls then reserve again. The budget is
	// then passed by at most the lost settlements' costs and the lost
	// holds' estimates, as documented; a hold is only lost while its call
	// is in flight, so at most workers × goroutines of them, each at most
	// maxEstimateUSD. Anything more is a bug; without a failover, nothing.
	lostHolds := new(big.Rat).Mul(big.NewRat(int64(f.workers*f.goroutines), 1), maxEstimateUSD)
	if over := new(big.Rat).Sub(spent, limit); over.Sign() > 0 {
		// Redis may also charge the started holds of calls that failed
		// closed at their estimates (see below).
		failedClosed := new(big.Rat).Mul(big.NewRat(int64(f.Unavailable), 1), maxEstimateUSD)
		if mayLose && over.Cmp(new(big.Rat).Add(lostHolds, failedClosed)) <= 0 {
			t.Logf("Redis counts %s > budget %s: %s over, within the %s USD of holds a failover may lose and the %s USD of holds of calls that failed closed", st.Balance.SpentUSD, budget, over.FloatString(9), lostHolds.FloatString(9), failedClosed.FloatString(9))
		} else {
			t.Errorf("OVERSHOOT: spent %s > budget %s", st.Balance.SpentUSD, budget)
		}
	}
	if over := new(big.Rat).Sub(ran, limit); over.Sign() > 0 {
		lostCost := new(big.Rat).Sub(ran, spent)
		if lostCost.Sign() < 0 {
			lostCost.SetInt64(0)
		}
		if allowed := new(big.Rat).Add(lostCost, lostHolds); mayLose && over.Cmp(allowed) <= 0 {
			t.Logf("the workers' calls cost %s > budget %s: %s over, within the %s USD of settlements the failover lost and the %s USD of holds it may lose", ran.FloatString(18), budget, over.FloatString(9), lostCost.FloatString(9), lostHolds.FloatString(9))
		} else {
			t.Errorf("OVERSHOOT: the workers' calls cost %s > budget %s", ran.FloatString(18), budget)
		}
	}
	_, settled := rawMoney(t, c, s)
	lost := len(f.Ran) - int(settled)
	switch {
	case fo == noFailover && spent.Cmp(ran) != 0:
		t.Errorf("Redis counts %s spent, the workers' settled calls cost %s: not exact", st.Balance.SpentUSD, ran.FloatString(18))
	case !mayLose && lost != 0:
		t.Errorf("Redis recorded %d settlements, the workers completed %d calls", settled, len(f.Ran))
	case lost < 0:
		t.Errorf("Redis recorded %d settlements (%s USD) for %d completed calls (%s USD): counted twice", settled, st.Balance.SpentUSD, len(f.Ran), ran.FloatString(18))
	case spent.Cmp(ran) > 0:
		// Redis counts more than the settled calls cost. The one allowed
		// cause: a call that failed closed during a failover after its
		// hold was started is charged its estimate when the lease lapses
		// (started calls are spent), at most maxEstimateUSD each.
		over := new(big.Rat).Sub(spent, ran)
		bound := new(big.Rat).Mul(big.NewRat(int64(f.Unavailable), 1), maxEstimateUSD)
		if fo == noFailover || over.Cmp(bound) > 0 {
			t.Errorf("Redis counts %s USD more than the %d completed calls cost, beyond the %s USD the holds of %d calls that failed closed may add: counted twice", over.FloatString(9), len(f.Ran), bound.FloatString(9), f.Unavailable)
		} else {
			t.Logf("Redis counts %s USD more than the completed calls cost: the started holds of calls that failed closed, charged at their estimates (at most %s USD)", over.FloatString(9), bound.FloatString(9))
		}
	case mayLose:
		t.Logf("loss window: %d acknowledged settlements (%s USD) missing after the failover", lost, new(big.Rat).Sub(ran, spent).FloatString(9))
	}
	if st.Balance.ReservedUSD != "0" {
		t.Errorf("%s USD still reserved after every worker ended", st.Balance.ReservedUSD)
	}
	seen := make(map[string]bool, len(f.Ran))
	for _, r := range f.Ran {
		if seen[r.ID] {
			t.Errorf("call %s settled twice", r.ID)
		}
		seen[r.ID] = true
	}
	if f.RanUnplanned > 0 || f.ReuseWrong > 0 {
		t.Errorf("%d calls ran without a permit, %d reuses returned other bytes", f.RanUnplanned, f.ReuseWrong)
	}
	if len(f.Other) > 0 {
		t.Errorf("%d unexpected outcomes, first: %s", len(f.Other), f.Other[0])
	}
}

// TestMultiProcess: 4 processes × 16 goroutines × 160 calls spend one
// budget that runs out half way, with random estimates and costs below
// them, and reuse each other's results.
func TestMultiProcess(t *testing.T) {
	p := startRedis(t)
	const budget = "550.123456789012345678"
	if testing.Short() {
		t.Skip("multi-process run skipped in -short mode")
	}
	f := runFleet(t, []string{p.addr()}, false, "mp", budget, 4, 16, 160, nil)
	f.check(t, p.client(t), "mp", budget, noFailover)
	if f.Deferred == 0 {
		t.Error("the budget never ran out: the cap was not tested")
	}
	if f.CrossReused == 0 {
		t.Error("no result saved by one process was reused by another")
	}
	if f.ReuseMissing > 0 {
		t.Errorf("%d reuse decisions found no saved result", f.ReuseMissing)
	}
	if f.Unavailable > 0 {
		t.Errorf("%d calls failed closed with Redis up", f.Unavailable)
	}
}

// TestFleetScale measures calls/s per scope from 1, 4 and 16 worker
// processes (16 goroutines each, 10,240 calls in all, a budget that never
// runs out), and checks the same invariants as TestMultiProcess. It is a
// measurement, run on request: REDISLEDGER_FLEET_SCALE=1 go test -run
// TestFleetScale -v.
func TestFleetScale(t *testing.T) {
	if os.Getenv("REDISLEDGER_FLEET_SCALE") == "" {
		t.Skip("a measurement: set REDISLEDGER_FLEET_SCALE=1 to run it")
	}
	p := startRedis(t)
	const budget = "1000000"
	c := p.client(t)
	for _, procs := range []int{1, 4, 16} {
		scope := fmt.Sprintf("scale-%d", procs)
		st0 := statsOf(t, c)
		f := runFleet(t, []string{p.addr()}, false, scope, budget, procs, 16, 10240/procs/16, nil)
		st1 := statsOf(t, c)
		// Whether Redis is what limits the rate: its CPU per call (in
		// user and kernel mode), how much of one core it used while the
		// workers ran, and the function calls each read of a
		// connection carried (more than one when calls are pipelined).
		t.Logf("%d workers: redis-server used %.0f µs of CPU per call (user %.0f, sys %.0f), %.0f%% of one core; %.2f function calls per read", procs, (st1.cpu()-st0.cpu())/10240, (st1.user-st0.user)/10240, (st1.sys-st0.sys)/10240, (st1.cpu()-st0.cpu())/float64(f.duration.Microseconds())*100, (st1.calls-st0.calls)/max(st1.reads-st0.reads, 1))
		f.check(t, c, scope, budget, noFailover)
	}
}
