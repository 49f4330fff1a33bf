package machine

import (
	"testing"
	"time"
)

func TestParseCPULine(t *testing.T) {
	tests := []struct {
		line string
		want time.Duration
		ok   bool
	}{
		// user nice system idle iowait irq softirq steal guest guest_nice
		{"cpu  100 5 50 9000 40 3 2 10 0 0", 170 * 10 * time.Millisecond, true},
		{"cpu  1 2 3 4 5 6 7 8", 27 * 10 * time.Millisecond, true},
		{"cpu0 100 5 50 9000 40 3 2 10 0 0", 0, false},
		{"cpu  1 2 3", 0, false},
		{"cpu  1 x 3 4 5 6 7 8", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseCPULine(tt.line)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseCPULine(%q) = %v, %v; want %v, %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
}

// TestOthers checks the meter's sum on made-up counters: the machine's
// busy time less this process's, per second of wall time.
func TestOthers(t *testing.T) {
	busy, own := time.Duration(0), time.Duration(0)
	m := &CPUMeter{
		readBusy: func() (time.Duration, bool) { return busy, true },
		readOwn:  func() (time.Duration, bool) { return own, true },
	}
	m.reset()
	m.start = time.Now().Add(-10 * time.Second)
	busy, own = 12*time.Second, 7*time.Second // 5 s of others' work in 10 s
	if got, ok := m.Others(); !ok || got < 0.49 || got > 0.51 {
		t.Errorf("Others = %.3f, %v; want 0.5, true", got, ok)
	}
	own = 13 * time.Second // more than the machine's: clock skew, never below 0
	if got, ok := m.Others(); !ok || got != 0 {
		t.Errorf("Others = %.3f, %v; want 0, true", got, ok)
	}
	m.unknown = true
	if _, ok := m.Others(); ok {
		t.Error("Others ok with an unknown start")
	}
}

// TestOwnCPUCountsThisProcess spins a CPU in this process for 300 ms:
// the meter's own time grows by about as much, so that work is never
// counted as others'. (Others' share itself depends on what else runs,
// such as other packages' tests, and is not checked here.)
func TestOwnCPUCountsThisProcess(t *testing.T) {
	m := NewCPUMeter()
	if m.unknown {
		t.Skip("this machine does not tell its CPU time (no /proc/stat or getrusage)")
	}
	end := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(end) {
	}
	own, ok := m.readOwn()
	if !ok {
		t.Fatal("getrusage failed")
	}
	if got := own - m.own; got < 200*time.Millisecond {
		t.Errorf("own CPU grew by %v while this process spun a CPU for 300 ms", got)
	}
	if _, ok := m.Others(); !ok {
		t.Error("Others not known on a machine that tells its CPU time")
	}
}
