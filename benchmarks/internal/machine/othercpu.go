package machine

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"time"
)

// A CPUMeter measures how much CPU the machine spent on work other than
// this process's own (its threads and its children that have been waited
// for) since the meter was made. A run's own load generators and servers
// raise the load average, so the load average at a run's end cannot tell
// whether someone else was busy; this can.
type CPUMeter struct {
	start    time.Time
	busy     time.Duration // the machine's busy CPU time from /proc/stat
	own      time.Duration // this process's and its waited-for children's
	unknown  bool
	readBusy func() (time.Duration, bool)
	readOwn  func() (time.Duration, bool)
}

// NewCPUMeter starts a meter.
func NewCPUMeter() *CPUMeter {
	m := &CPUMeter{readBusy: machineBusy, readOwn: ownCPU}
	m.reset()
	return m
}

func (m *CPUMeter) reset() {
	m.start = time.Now()
	var ok1, ok2 bool
	m.busy, ok1 = m.readBusy()
	m.own, ok2 = m.readOwn()
	m.unknown = !ok1 || !ok2
}

// Others returns the CPUs that work other than this process's kept busy
// on average since the meter started (0.5 is half a CPU); ok is false when
// the machine does not tell.
func (m *CPUMeter) Others() (cpus float64, ok bool) {
	busy, ok1 := m.readBusy()
	own, ok2 := m.readOwn()
	wall := time.Since(m.start)
	if m.unknown || !ok1 || !ok2 || wall <= 0 {
		return 0, false
	}
	others := (busy - m.busy) - (own - m.own)
	return max(float64(others)/float64(wall), 0), true
}

// userHZ is the unit of /proc/stat's times, fixed at 100 per second for
// user space whatever the kernel's own tick.
const userHZ = 100

// machineBusy reads the time all CPUs spent busy from /proc/stat's cpu
// line: user, nice, system, irq, softirq and steal (time another virtual
// machine had the CPU); not idle and iowait. guest time is already in user.
func machineBusy() (time.Duration, bool) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return 0, false
	}
	return parseCPULine(sc.Text())
}

// parseCPULine reads the busy time of /proc/stat's first line.
func parseCPULine(line string) (time.Duration, bool) {
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, false
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} { // user nice system [idle iowait] irq softirq steal
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil || n < 0 {
			return 0, false
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, true
}
