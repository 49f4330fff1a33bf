package report

import (
	"fmt"

	"github.com/agentpreflight/preflight/benchmarks"
)

// checkPerByte writes Check's time per byte of the request beside
// SHA-256's on the same bytes: requestHash hashes the request's canonical
// form, so SHA-256 is the floor no implementation of Check gets under.
func (r *results) checkPerByte(p func(string, ...any)) {
	t := r.check
	p("### Check: ns per byte against SHA-256\n\n")
	p("Time per call ÷ the request's size in bytes. SHA-256 over the request's bytes is the physical floor of the work: `requestHash` is SHA-256 over the request's canonical bytes, which are about as long.\n\n")
	p("| case | request | SHA-256 floor | preflight cold | preflight warm | santhosh warm | google warm | cold ÷ SHA-256 | warm ÷ SHA-256 |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	perByte := func(c, impl string) (float64, bool) {
		m := t.get(c, impl)
		return m.NsPerByte, m.HasNsPerByte && m.NsPerByte > 0
	}
	cell := func(c, impl string) string {
		if v, ok := perByte(c, impl); ok {
			return fmt.Sprintf("%.2f ns/B", v)
		}
		return "–"
	}
	for _, c := range t.Cases {
		size := "–"
		if m := t.get(c, benchmarks.ImplSHA256); m.HasNs && m.HasNsPerByte && m.NsPerByte > 0 {
			size = fmtBytes(m.NsPerOp / m.NsPerByte)
		}
		sha, shaOK := perByte(c, benchmarks.ImplSHA256)
		over := func(impl string) string {
			if v, ok := perByte(c, impl); ok && shaOK {
				return fmtRatio(v / sha)
			}
			return "–"
		}
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", c, size, cell(c, benchmarks.ImplSHA256),
			cell(c, benchmarks.ImplPreflight), cell(c, benchmarks.ImplPreflightWarm),
			cell(c, benchmarks.ImplSanthoshWarm), cell(c, benchmarks.ImplGoogleWarm),
			over(benchmarks.ImplPreflight), over(benchmarks.ImplPreflightWarm))
	}
	p("\n")
}

// checkWarmCPU writes the cold and warm comparisons in CPU time: on a
// machine other work shares, the wall clock counts the time that work
// held the core, while the process's CPU time (user + system, every
// thread, the garbage collector's included) does not.
func (r *results) checkWarmCPU(p func(string, ...any)) {
	t := r.check
	cpu := func(c, impl string) (float64, bool) {
		m := t.get(c, impl)
		return m.CPUNsPerOp, m.HasCPU && m.CPUNsPerOp > 0
	}
	if _, ok := cpu(t.Cases[0], benchmarks.ImplPreflightWarm); !ok {
		return
	}
	p("### Check: CPU time per call\n\n")
	p("The cold and warm comparisons again in the process's CPU time per call (user + system, every thread, the garbage collector's included), which other work on a shared machine does not inflate as it does the wall clock. Speed-ups are peer ÷ preflight, cold against cold and warm against warm.\n\n")
	p("| case | preflight cold | santhosh cold | vs santhosh cold (target ≥ %.0f×) | preflight warm | santhosh warm | google warm | vs santhosh warm | vs google warm |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n", targetColdSpeedup)
	type pair struct {
		peer, own string
		target    float64
		strict    bool
	}
	pairs := []pair{{benchmarks.ImplSanthoshCold, benchmarks.ImplPreflight, targetColdSpeedup, false},
		{benchmarks.ImplSanthoshWarm, benchmarks.ImplPreflightWarm, targetWarmSpeedup, true},
		{benchmarks.ImplGoogleWarm, benchmarks.ImplPreflightWarm, targetWarmSpeedup, true}}
	ratios := make([][]float64, len(pairs))
	for _, c := range t.Cases {
		time := func(impl string) string {
			if v, ok := cpu(c, impl); ok {
				return formatNs(v)
			}
			return "–"
		}
		cells := make([]string, len(pairs))
		for i, pr := range pairs {
			cells[i] = "–"
			a, aok := cpu(c, pr.peer)
			b, bok := cpu(c, pr.own)
			if aok && bok {
				v := a / b
				cells[i] = fmtRatio(v) + " " + mark(v >= pr.target && (!pr.strict || v > pr.target))
				ratios[i] = append(ratios[i], v)
			}
		}
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", c, time(benchmarks.ImplPreflight), time(benchmarks.ImplSanthoshCold), cells[0],
			time(benchmarks.ImplPreflightWarm), time(benchmarks.ImplSanthoshWarm), time(benchmarks.ImplGoogleWarm), cells[1], cells[2])
	}
	p("| **geomean** | | | **%s** | | | | **%s** | **%s** |\n\n", fmtRatio(geomean(ratios[0])), fmtRatio(geomean(ratios[1])), fmtRatio(geomean(ratios[2])))
}
