package report

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// profile is the outcome of profiling preflight's Check on one case.
type profile struct {
	Case              string
	CPUFile, MemFile  string
	CPUTop, AllocsTop string // pprof -top, cumulative CPU and allocated bytes
}

// runProfiles writes a CPU and a memory profile of the preflight
// implementation on each profiled case, in separate runs (exact allocation
// sampling would distort the CPU profile), and their pprof -top summaries
// limited to the measured call.
func runProfiles(ctx context.Context, o Options, goBin, bin string) ([]profile, error) {
	dir, err := filepath.Abs(o.ProfileDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	benchtime := "5s"
	if o.Quick {
		benchtime = "100ms"
	}
	var out []profile
	for _, c := range o.ProfileCases {
		p := profile{
			Case:    c,
			CPUFile: filepath.Join(dir, "check_"+c+".cpu.pprof"),
			MemFile: filepath.Join(dir, "check_"+c+".mem.pprof"),
		}
		pattern := "^BenchmarkCheck$/^case=" + regexp.QuoteMeta(c) + "$/^impl=preflight$"
		logf(o, "profiling Check on %s", c)
		base := []string{"-test.run", "^$", "-test.bench", pattern, "-test.benchmem", "-test.count", "1", "-test.benchtime", benchtime}
		if _, err := command(ctx, o.ModuleDir, bin, append(base, "-test.cpuprofile", p.CPUFile)...); err != nil {
			return nil, err
		}
		if _, err := command(ctx, o.ModuleDir, bin, append(base, "-test.memprofile", p.MemFile, "-test.memprofilerate", "1")...); err != nil {
			return nil, err
		}
		// The focus keeps the benchmark harness out: only the measured
		// closure and what it calls.
		focus := "-focus=preparePreflight"
		hide := `-hide=^testing\.|benchmarks\.(measure|BenchmarkCheck)`
		cpu, err := command(ctx, o.ModuleDir, goBin, "tool", "pprof", "-top", "-cum", "-nodecount=30", focus, hide, bin, p.CPUFile)
		if err != nil {
			return nil, err
		}
		mem, err := command(ctx, o.ModuleDir, goBin, "tool", "pprof", "-top", "-sample_index=alloc_space", "-nodecount=30", focus, hide, bin, p.MemFile)
		if err != nil {
			return nil, err
		}
		p.CPUTop, p.AllocsTop = string(cpu), string(mem)
		for name, text := range map[string]string{".cpu.top.txt": p.CPUTop, ".mem.top.txt": p.AllocsTop} {
			if err := os.WriteFile(filepath.Join(dir, "check_"+c+name), []byte(text), 0o644); err != nil {
				return nil, err
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// topLines keeps pprof's header and the first n rows of its table.
func topLines(text string, n int) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i, l := range lines {
		if strings.Contains(l, "flat%") {
			end := min(len(lines), i+1+n)
			return strings.Join(lines[:end], "\n")
		}
	}
	return strings.Join(lines, "\n")
}
