// Package machine describes the machine a benchmark or load run is on, for
// the reports of both.
package machine

import (
	"bufio"
	"os"
	"runtime"
	"strings"
)

// CPUModel returns the CPU's model name from /proc/cpuinfo, or GOARCH when
// it cannot be read.
func CPUModel() string {
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

// LoadAverage returns the 1, 5 and 15-minute load averages as
// "a / b / c", or "unknown".
func LoadAverage() string {
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

// MemTotal returns the machine's memory from /proc/meminfo, such as
// "8048576 kB", or "unknown".
func MemTotal() string {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "unknown"
	}
	if f := strings.Fields(strings.SplitN(string(data), "\n", 2)[0]); len(f) >= 2 {
		return f[1] + " kB"
	}
	return "unknown"
}
