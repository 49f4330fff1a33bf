package machine

import (
	"runtime"
	"testing"
	"time"
)

func TestParseIdle(t *testing.T) {
	tests := []struct {
		line string
		want time.Duration
		ok   bool
	}{
		// user nice system idle iowait irq softirq steal guest guest_nice
		{"cpu  100 5 50 9000 40 3 2 10 0 0", 9040 * 10 * time.Millisecond, true},
		{"cpu  1 2 3 4 5", 9 * 10 * time.Millisecond, true},
		{"cpu0 100 5 50 9000 40 3 2 10 0 0", 0, false},
		{"cpu  1 2 3 4", 0, false},
		{"cpu  1 2 3 x 5", 0, false},
		{"cpu  1 2 3 4 -5", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseIdle(tt.line)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseIdle(%q) = %v, %v; want %v, %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
}

// TestOthers checks the meter's sum on made-up counters: what the
// machine's CPUs did not idle, less this process's, per second of wall
// time.
func TestOthers(t *testing.T) {
	clock := time.Unix(1000, 0)
	idle, own := time.Duration(0), time.Duration(0)
	m := &CPUMeter{
		cpus:     2,
		readIdle: func() (time.Duration, bool) { return idle, true },
		readOwn:  func() (time.Duration, bool) { return own, true },
		now:      func() time.Time { return clock },
	}
	m.reset()
	// 10 s on 2 CPUs: 8 s idle, so 12 s busy; 7 s of it this process's.
	clock = clock.Add(10 * time.Second)
	idle, own = 8*time.Second, 7*time.Second
	if got, ok := m.Others(); !ok || got < 0.499 || got > 0.501 {
		t.Errorf("Others = %.3f, %v; want 0.5, true", got, ok)
	}
	own = 13 * time.Second // more than the machine was busy: never below 0
	if got, ok := m.Others(); !ok || got != 0 {
		t.Errorf("Others = %.3f, %v; want 0, true", got, ok)
	}
	m.unknown = true
	if _, ok := m.Others(); ok {
		t.Error("Others ok with an unknown start")
	}
}

// TestOwnCPUCountsThisProcess spins a CPU in this process until getrusage
// has counted 100 ms of it (the test may get only part of a CPU while
// other tests run): that work is the meter's own, never others'. Others'
// share itself depends on what else runs and is not checked here.
func TestOwnCPUCountsThisProcess(t *testing.T) {
	m := NewCPUMeter()
	if m.unknown {
		t.Skip("this machine does not tell its CPU time (no /proc/stat or getrusage)")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		own, ok := m.readOwn()
		if !ok {
			t.Fatal("getrusage failed")
		}
		if own-m.own >= 100*time.Millisecond {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("own CPU grew by %v in 10 s of spinning", own-m.own)
		}
		for end := time.Now().Add(5 * time.Millisecond); time.Now().Before(end); {
		}
	}
	if _, ok := m.Others(); !ok {
		t.Error("Others not known on a machine that tells its CPU time")
	}
}

// TestOnlineCPUs checks that the meter counts at least the CPUs this
// process may run on: the machine's can only be more.
func TestOnlineCPUs(t *testing.T) {
	if n := onlineCPUs(); n < runtime.NumCPU() {
		t.Errorf("onlineCPUs = %d, fewer than runtime.NumCPU's %d", n, runtime.NumCPU())
	}
}
