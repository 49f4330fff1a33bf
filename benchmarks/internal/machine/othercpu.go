package machine

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// A CPUMeter measures how much CPU the machine spent on work other than
// this process's own (its threads and its children that have been waited
// for) since the meter was made. A run's own load generators and servers
// raise the load average, so the load average at a run's end cannot tell
// whether someone else was busy; this can.
//
// The machine's busy time is its CPUs' time less their idle time, both
// from /proc/stat. Kernels that count busy time by sampling each tick
// miss the short bursts of a process that mostly waits on the network,
// while they count idle time exactly; so busy time is taken as what was
// not idle. Work that kernel threads do for this process (network
// interrupts, writeback) counts as others'. A CPUMeter is not safe for
// concurrent use.
type CPUMeter struct {
	start   time.Time
	idle    time.Duration // the machine's idle CPU time from /proc/stat
	own     time.Duration // this process's and its waited-for children's
	unknown bool
	cpus    int // the machine's, as /proc/stat counts them
	// The sources, replaced in tests.
	readIdle func() (time.Duration, bool)
	readOwn  func() (time.Duration, bool)
	now      func() time.Time
}

// NewCPUMeter starts a meter.
func NewCPUMeter() *CPUMeter {
	m := &CPUMeter{readIdle: machineIdle, readOwn: ownCPU, now: time.Now, cpus: onlineCPUs()}
	m.reset()
	return m
}

// onlineCPUs counts the CPUs /proc/stat reports on (the machine's, not
// only those this process may run on), or runtime.NumCPU when it cannot
// be read.
func onlineCPUs() int {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return runtime.NumCPU()
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "cpu"); ok && rest != "" && rest[0] >= '0' && rest[0] <= '9' {
			n++
		}
	}
	if n == 0 {
		return runtime.NumCPU()
	}
	return n
}

// reset starts the meter's window now.
func (m *CPUMeter) reset() {
	m.start = m.now()
	var ok1, ok2 bool
	m.idle, ok1 = m.readIdle()
	m.own, ok2 = m.readOwn()
	m.unknown = !ok1 || !ok2
}

// Others returns the CPUs that work other than this process's kept busy
// on average since the meter started (0.5 is half a CPU); ok is false when
// the machine does not tell.
func (m *CPUMeter) Others() (cpus float64, ok bool) {
	idle, ok1 := m.readIdle()
	own, ok2 := m.readOwn()
	wall := m.now().Sub(m.start)
	if m.unknown || !ok1 || !ok2 || wall <= 0 {
		return 0, false
	}
	busy := time.Duration(m.cpus)*wall - (idle - m.idle)
	others := busy - (own - m.own)
	return max(float64(others)/float64(wall), 0), true
}

// userHZ is the unit of /proc/stat's times, fixed at 100 per second for
// user space whatever the kernel's own tick.
const userHZ = 100

// machineIdle reads the time all CPUs spent idle, or waiting for I/O with
// nothing to run, from /proc/stat's cpu line.
func machineIdle() (time.Duration, bool) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return 0, false
	}
	return parseIdle(sc.Text())
}

// parseIdle reads the idle and iowait times of /proc/stat's first line.
func parseIdle(line string) (time.Duration, bool) {
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0, false
	}
	var ticks int64
	for _, i := range []int{4, 5} { // cpu user nice system idle iowait ...
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil || n < 0 {
			return 0, false
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, true
}
