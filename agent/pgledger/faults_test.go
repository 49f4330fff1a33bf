package pgledger

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent"
)

// heavy runs a long fault test only under CI=true or LEDGER_FAULTS=1,
// so that a plain go test stays short.
func heavy(t *testing.T) {
	t.Helper()
	if os.Getenv("CI") != "true" && os.Getenv("LEDGER_FAULTS") != "1" {
		t.Skip("long fault test: runs under CI=true or LEDGER_FAULTS=1")
	}
}

// settledCount is how many reservations of scope were settled.
func settledCount(t *testing.T, p *pgProc, scope string) int {
	t.Helper()
	var n int
	if err := p.pool(t).QueryRow(context.Background(), "SELECT count(*) FROM preflight_ended WHERE scope = $1 AND state IN (0, 1)", scope).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// underLoad runs a Guard's load on scope while fault happens, then checks
// that every call that ran was settled exactly once, that nothing an
// acknowledged settlement counted was lost, that calls resumed after the
// fault, and that what PostgreSQL counts beyond the acknowledged
// costs is at most the estimates (0.01 each) of the calls that failed
// closed (a reservation committed whose reply was lost is charged when its
// lease expires: counted, never spent twice).
func underLoad(t *testing.T, p *pgProc, scope string, fault func()) {
	t.Helper()
	s := newStore(t, p, scope, &Options{Lease: time.Second, Timeout: time.Second})
	g, err := agent.NewGuard(nil, &agent.GuardOptions{Store: s, BudgetUSD: "100000", NoCoalesce: true, StoreTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var l load
	stop := make(chan struct{})
	wg := l.run(g, 8, stop)
	time.Sleep(time.Second)
	before := len(l.ranSnapshot())
	fault()
	faulted := time.Now()
	for len(l.ranSnapshot()) < before+50 {
		if time.Since(faulted) > 30*time.Second {
			t.Fatal("calls did not resume after the fault")
		}
		time.Sleep(20 * time.Millisecond)
	}
	resumed := time.Since(faulted)
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	time.Sleep(1500 * time.Millisecond) // holds whose reply was lost: leases expire
	st, err := s.State(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	acked := sumUSD(t, l.ran)
	extra := new(big.Rat).Sub(rat(t, st.Balance.SpentUSD), acked)
	settled := settledCount(t, p, scope)
	t.Logf("%d calls settled and acknowledged, %d failed closed; calls resumed %v after the fault; PostgreSQL counts %s spent, %s beyond the acknowledged settlements; %d settlements stored",
		len(l.ran), l.failedClose.Load(), resumed.Round(time.Millisecond), st.Balance.SpentUSD, extra.FloatString(3), settled)
	if settled != len(l.ran) || int64(len(l.ran)) != l.funcRuns.Load() {
		t.Errorf("%d tool calls ran, %d were acknowledged, %d settlements stored: want all equal", l.funcRuns.Load(), len(l.ran), settled)
	}
	if extra.Sign() < 0 {
		t.Errorf("acknowledged settlements lost: PostgreSQL counts %s less than the workers were told", new(big.Rat).Neg(extra).FloatString(3))
	}
	if limit := new(big.Rat).SetFrac64(l.failedClose.Load(), 100); extra.Cmp(limit) > 0 {
		t.Errorf("PostgreSQL counts %s beyond the acknowledged settlements, above the %s of the calls that failed closed", extra.FloatString(3), limit.FloatString(3))
	}
	if st.Balance.ReservedUSD != "0" {
		t.Errorf("%s still held after every lease", st.Balance.ReservedUSD)
	}
	if len(l.other) > 0 {
		t.Errorf("%d unexpected outcomes, first %s", len(l.other), l.other[0])
	}
}

func (l *load) ranSnapshot() []ranCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ran
}

// TestServerKilled kills PostgreSQL (SIGKILL of the postmaster and every
// backend) under load and starts it again on the same data directory: it
// recovers from its WAL. No acknowledged settlement is lost; every call
// that ran settles (retried across the restart) exactly once.
func TestServerKilled(t *testing.T) {
	heavy(t)
	p := startPostgres(t)
	started := func() (at time.Time) {
		pool := p.pool(t)
		defer pool.Close()
		if err := pool.QueryRow(context.Background(), "SELECT pg_postmaster_start_time()").Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at
	}
	before := started()
	underLoad(t, p, "killed", func() {
		p.kill()
		time.Sleep(500 * time.Millisecond)
		p.start()
	})
	if !started().After(before) {
		t.Error("the server was not restarted: the test did not test anything")
	}
}

// TestConnectionLoss terminates every connection of the workers' pool
// (pg_terminate_backend) under load, three times.
func TestConnectionLoss(t *testing.T) {
	heavy(t)
	p := startPostgres(t)
	admin := p.pool(t)
	terminated := 0
	underLoad(t, p, "cut", func() {
		for range 3 {
			var n int
			if err := admin.QueryRow(context.Background(), "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND datname = current_database() AND backend_type = 'client backend'").Scan(&n); err != nil {
				t.Fatal(err)
			}
			terminated += n
			time.Sleep(100 * time.Millisecond)
		}
	})
	if terminated == 0 {
		t.Error("no connection was terminated: the test did not test anything")
	}
}

// TestWorkerKilledMidCall: a worker process reserves 0.75 of a budget of 1
// for a call that started, and is killed with SIGKILL. When its lease
// expires the 0.75 is charged, never given to another call.
func TestWorkerKilledMidCall(t *testing.T) {
	p := startPostgres(t)
	out := filepath.Join(t.TempDir(), "reserved")
	const lease = time.Second
	cmd := startWorker(t, workerConfig{DSN: p.dsn(), Scope: "kill", BudgetUSD: "1", Lease: lease, Hang: true, Out: out})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(out); err == nil && len(b) > 0 {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("the worker never reserved")
		}
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	s := newStore(t, p, "kill", nil)
	ctx := context.Background()
	time.Sleep(lease + 200*time.Millisecond)
	ok, b, err := s.Reserve(ctx, agent.Reservation{ID: "other", AmountUSD: "0.5", LimitUSD: "1", Started: true})
	if ok || err != nil {
		t.Errorf("0.5 reserved after a killed worker's started 0.75 call: %v, %+v, %v; want refused", ok, b, err)
	}
	if b.SpentUSD != "0.75" || b.ReservedUSD != "0" || b.Calls != 1 {
		t.Errorf("after the killed worker's lease: %+v, want its 0.75 charged", b)
	}
}

// TestUnsafeServerRefused: New refuses a server with fsync off unless the
// caller opts out.
func TestUnsafeServerRefused(t *testing.T) {
	p := startPostgres(t, "-c", "fsync=off")
	if _, err := New(context.Background(), p.pool(t), "unsafe", nil); !errors.Is(err, ErrUnsafeServer) {
		t.Errorf("New with fsync off: %v; want ErrUnsafeServer", err)
	}
	if _, err := New(context.Background(), p.pool(t), "unsafe", &Options{AllowUnsafeServer: true}); err != nil {
		t.Errorf("New with fsync off and AllowUnsafeServer: %v", err)
	}
}

// TestMultiProcess: 4 processes × 16 goroutines spend one budget that
// runs out half way. PostgreSQL's spending equals, to the digit, the sum
// of the costs the workers were told were settled, and never passes the
// budget.
func TestMultiProcess(t *testing.T) {
	heavy(t)
	p := startPostgres(t)
	const budget = "150.123456789012345678"
	dir := t.TempDir()
	start := time.Now()
	var cmds []*workerProc
	for i := range 4 {
		cfg := workerConfig{Index: i, DSN: p.dsn(), Scope: "mp", BudgetUSD: budget, Goroutines: 16, Calls: 40, Out: filepath.Join(dir, fmt.Sprintf("w%d.json", i))}
		cmds = append(cmds, &workerProc{cfg: cfg, wait: startWorker(t, cfg).Wait})
	}
	var ran []ranCall
	deferred, unavailable := 0, 0
	for _, w := range cmds {
		if err := w.wait(); err != nil {
			t.Fatalf("worker %d: %v", w.cfg.Index, err)
		}
		r := readReport(t, w.cfg.Out)
		ran = append(ran, r.Ran...)
		deferred += r.Deferred
		unavailable += r.Unavailable
		if len(r.Other) > 0 {
			t.Errorf("worker %d: %d unexpected outcomes, first %s", w.cfg.Index, len(r.Other), r.Other[0])
		}
	}
	took := time.Since(start)
	st, err := newStore(t, p, "mp", nil).State(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	total := len(ran) + deferred + unavailable
	t.Logf("4 processes × 16 goroutines: %d calls in %v (%.0f calls/s): ran %d, deferred %d, failed closed %d; spent %s of %s",
		total, took.Round(time.Millisecond), float64(total)/took.Seconds(), len(ran), deferred, unavailable, st.Balance.SpentUSD, budget)
	if rat(t, st.Balance.SpentUSD).Cmp(sumUSD(t, ran)) != 0 {
		t.Errorf("PostgreSQL counts %s spent, the workers' settled calls cost %s: not exact", st.Balance.SpentUSD, sumUSD(t, ran).FloatString(18))
	}
	if rat(t, st.Balance.SpentUSD).Cmp(rat(t, budget)) > 0 {
		t.Errorf("OVERSHOOT: spent %s > budget %s", st.Balance.SpentUSD, budget)
	}
	if deferred == 0 {
		t.Error("the budget never ran out: the cap was not tested")
	}
	if unavailable > 0 {
		t.Errorf("%d calls failed closed with the server up", unavailable)
	}
	if st.Balance.ReservedUSD != "0" {
		t.Errorf("%s still held after every worker ended", st.Balance.ReservedUSD)
	}
}

type workerProc struct {
	cfg  workerConfig
	wait func() error
}
