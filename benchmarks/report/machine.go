package report

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	machinepkg "github.com/agentpreflight/preflight/benchmarks/internal/machine"
)

// machine describes where a run happened.
type machine struct {
	CPU       string // model name from /proc/cpuinfo, or GOARCH
	Cores     int    // logical CPUs
	GoVersion string // of the toolchain that built the benchmarks
	OS        string // GOOS/GOARCH and kernel release
	Date      time.Time
	Commit    string // repository HEAD, short; empty when unknown
	Dirty     bool   // uncommitted changes in the library or benchmarks
	LoadStart string // /proc/loadavg 1/5/15-minute averages before the run
	LoadEnd   string // and after
	// Others is the CPUs other processes than the run's own kept busy on
	// average during the run (the run's load generators and servers are
	// its own); OthersKnown is false when the machine does not tell.
	Others      float64
	OthersKnown bool
	meter       *machinepkg.CPUMeter
}

// end records the state of the machine at the end of the run.
func (m *machine) end() {
	m.LoadEnd = machinepkg.LoadAverage()
	if m.meter != nil {
		m.Others, m.OthersKnown = m.meter.Others()
	}
}

func probeMachine(goBin, repoDir string) machine {
	m := machine{
		CPU:       machinepkg.CPUModel(),
		Cores:     runtime.NumCPU(),
		GoVersion: runtime.Version(),
		OS:        runtime.GOOS + "/" + runtime.GOARCH,
		Date:      time.Now().UTC(),
		LoadStart: machinepkg.LoadAverage(),
		meter:     machinepkg.NewCPUMeter(),
	}
	if out, err := exec.Command(goBin, "env", "GOVERSION").Output(); err == nil {
		m.GoVersion = strings.TrimSpace(string(out))
	}
	if rel, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.OS += ", Linux " + strings.TrimSpace(string(rel))
	}
	if out, err := exec.Command("git", "-C", repoDir, "rev-parse", "--short=12", "HEAD").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
		// Library and benchmark sources only; other files do not change
		// the numbers.
		st, err := exec.Command("git", "-C", repoDir, "status", "--porcelain", "--", "*.go", "go.mod", "internal", "benchmarks").Output()
		m.Dirty = err == nil && len(strings.TrimSpace(string(st))) > 0
	}
	return m
}
