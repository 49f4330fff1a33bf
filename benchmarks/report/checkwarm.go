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

// checkWarmCPU writes the warm comparison in CPU time: on a machine other
// work shares, the wall clock counts the time that work held the core,
// while the process's CPU time (user + system, every thread, the garbage
// collector's included) does not.
func (r *results) checkWarmCPU(p func(string, ...any)) {
	t := r.check
	cpu := func(c, impl string) (float64, bool) {
		m := t.get(c, impl)
		return m.CPUNsPerOp, m.HasCPU && m.CPUNsPerOp > 0
	}
	if _, ok := cpu(t.Cases[0], benchmarks.ImplPreflightWarm); !ok {
		return
	}
	p("### Check warm: CPU time per call\n\n")
	p("The warm comparison again in the process's CPU time per call (user + system, every thread, the garbage collector's included), which other work on a shared machine does not inflate as it does the wall clock. Speed-ups are peer ÷ preflight.\n\n")
	p("| case | preflight warm | santhosh warm | google warm | vs santhosh warm | vs google warm |\n|---|---:|---:|---:|---:|---:|\n")
	var vsS, vsG []float64
	for _, c := range t.Cases {
		pw, ok := cpu(c, benchmarks.ImplPreflightWarm)
		cells := []string{"–", "–", "–", "–", "–"}
		if ok {
			cells[0] = formatNs(pw)
		}
		for i, peer := range []string{benchmarks.ImplSanthoshWarm, benchmarks.ImplGoogleWarm} {
			if v, vok := cpu(c, peer); vok {
				cells[1+i] = formatNs(v)
				if ok {
					cells[3+i] = fmtRatio(v/pw) + " " + mark(v/pw > targetWarmSpeedup)
					if i == 0 {
						vsS = append(vsS, v/pw)
					} else {
						vsG = append(vsG, v/pw)
					}
				}
			}
		}
		p("| %s | %s | %s | %s | %s | %s |\n", c, cells[0], cells[1], cells[2], cells[3], cells[4])
	}
	p("| **geomean** | | | | **%s** | **%s** |\n\n", fmtRatio(geomean(vsS)), fmtRatio(geomean(vsG)))
}
