package report

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
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
}

func probeMachine(goBin, repoDir string) machine {
	m := machine{
		CPU:       cpuModel(),
		Cores:     runtime.NumCPU(),
		GoVersion: runtime.Version(),
		OS:        runtime.GOOS + "/" + runtime.GOARCH,
		Date:      time.Now().UTC(),
		LoadStart: loadAverage(),
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

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

// loadAverage returns the 1, 5 and 15-minute load averages, or "unknown".
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " / ")
}
