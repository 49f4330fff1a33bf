package report

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/agentpreflight/preflight/benchmarks"
)

// results is everything one run measured.
type results struct {
	opts          Options
	machine       machine
	check, decide *table // nil when the run left the family out
	tools         *table // BenchmarkToolSchemas by args and impl; nil when left out
	benchstatText []string
	profiles      []profile
	proxy         *proxyResult // nil when not measured (see proxyload.go)
	load          []loadResult
	checkChart    string
	decideChart   string
}

// Short column names and chart colors of the implementations.
var implShort = map[string]string{
	benchmarks.ImplPreflight:     "preflight cold",
	benchmarks.ImplPreflightWarm: "preflight warm",
	benchmarks.ImplSanthoshCold:  "santhosh cold",
	benchmarks.ImplGoogleCold:    "google cold",
	benchmarks.ImplSanthoshWarm:  "santhosh warm",
	benchmarks.ImplGoogleWarm:    "google warm",
	benchmarks.ImplJCSSHA256:     "JCS + SHA-256",
	benchmarks.ImplUnmarshal:     "Unmarshal floor",
	benchmarks.ImplSHA256:        "SHA-256 floor",
}

var implColor = map[string]string{
	benchmarks.ImplPreflight:     "#1b9e77",
	benchmarks.ImplPreflightWarm: "#66c2a5",
	benchmarks.ImplSanthoshCold:  "#d95f02",
	benchmarks.ImplGoogleCold:    "#7570b3",
	benchmarks.ImplSanthoshWarm:  "#f4b183",
	benchmarks.ImplGoogleWarm:    "#bcb8e0",
	benchmarks.ImplJCSSHA256:     "#e7298a",
	benchmarks.ImplUnmarshal:     "#555555",
	benchmarks.ImplSHA256:        "#bbbbbb",
}

// Targets of the issue.
const (
	targetColdSpeedup = 10.0 // santhosh cold / preflight, every case
	targetWarmSpeedup = 1.0  // santhosh warm or google warm / preflight warm, every case
	targetFloorRatio  = 1.0  // preflight / Unmarshal, every case
	targetServerRatio = 0.9  // preflightd req/s / bare req/s, every body, 1 and 4 cores
)

func checkImplNames() []string {
	var out []string
	for _, i := range benchmarks.CheckImpls {
		out = append(out, i.Name)
	}
	return out
}

func checkChart(t *table) []byte {
	return timeChart(t, checkImplNames(), "Check: preflight against the peers, time per call by case")
}

func decideChart(t *table) []byte {
	return timeChart(t, []string{benchmarks.ImplPreflight, benchmarks.ImplUnmarshal},
		"Decide: preflight against the Unmarshal floor, time per call")
}

// timeChart draws the time per call of the implementations names, one
// group of bars per case of t.
func timeChart(t *table, names []string, title string) []byte {
	var ss []series
	for _, n := range names {
		ss = append(ss, series{n, implShort[n], implColor[n]})
	}
	var gs []chartGroup
	for _, c := range t.Cases {
		g := chartGroup{Label: c}
		for _, n := range names {
			g.Values = append(g.Values, t.get(c, n).NsPerOp)
		}
		gs = append(gs, g)
	}
	return barChartSVG(title, ss, gs)
}

// ratioStats summarizes a per-case ratio: its geomean and its worst case
// (lowest when higher is better).
type ratioStats struct {
	N           int // cases with both measurements
	Geomean     float64
	Worst       float64
	WorstCase   string
	AllPass     bool // every measured case meets the threshold
	perCase     map[string]float64
	perCasePass map[string]bool
}

func newRatioStats(t *table, higherIsBetter bool, threshold float64, f func(c string) (float64, bool)) ratioStats {
	rs := ratioStats{AllPass: true, perCase: map[string]float64{}, perCasePass: map[string]bool{}}
	logSum := 0.0
	for _, c := range t.Cases {
		v, ok := f(c)
		if !ok || v <= 0 {
			continue
		}
		rs.N++
		logSum += math.Log(v)
		pass := v >= threshold
		if !higherIsBetter {
			pass = v <= threshold
		}
		rs.perCase[c], rs.perCasePass[c] = v, pass
		rs.AllPass = rs.AllPass && pass
		if rs.N == 1 || (higherIsBetter && v < rs.Worst) || (!higherIsBetter && v > rs.Worst) {
			rs.Worst, rs.WorstCase = v, c
		}
	}
	if rs.N > 0 {
		rs.Geomean = math.Exp(logSum / float64(rs.N))
	}
	return rs
}

func ratio(t *table, num, den string) func(c string) (float64, bool) {
	return func(c string) (float64, bool) {
		a, b := t.get(c, num), t.get(c, den)
		if !a.HasNs || !b.HasNs || b.NsPerOp == 0 {
			return 0, false
		}
		return a.NsPerOp / b.NsPerOp, true
	}
}

func fmtRatio(v float64) string {
	if v == 0 {
		return "–"
	}
	if v >= 10 {
		return fmt.Sprintf("%.1f×", v)
	}
	return fmt.Sprintf("%.2f×", v)
}

func mark(pass bool) string {
	if pass {
		return "✅"
	}
	return "❌"
}

func verdict(measured bool, pass bool) string {
	switch {
	case !measured:
		return "not measured"
	case pass:
		return "**pass**"
	default:
		return "**FAIL**"
	}
}

func fmtBytes(v float64) string {
	switch {
	case v >= 1<<20:
		return fmt.Sprintf("%.1f MiB", v/(1<<20))
	case v >= 1<<10:
		return fmt.Sprintf("%.1f KiB", v/(1<<10))
	default:
		return fmt.Sprintf("%.0f B", v)
	}
}

func geomean(vals []float64) float64 {
	s, n := 0.0, 0
	for _, v := range vals {
		if v > 0 {
			s += math.Log(v)
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return math.Exp(s / float64(n))
}

func (r *results) relLink(path string) string {
	rel, err := filepath.Rel(filepath.Dir(r.opts.Out), path)
	if err != nil {
		rel = path
	}
	return filepath.ToSlash(rel)
}

// markdown renders BENCHMARKS.md.
func (r *results) markdown() ([]byte, error) {
	var b bytes.Buffer
	o, m := r.opts, r.machine
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	p("# Benchmarks\n\n")
	p("<!-- Generated by benchmarks/cmd/report from one run; do not edit by hand. -->\n\n")
	if o.smoke() {
		p("> **Smoke run — not a published result.** This file was generated with count=%d and benchtime=%s", o.Count, o.BenchTime)
		if o.Quick {
			p(" (`-quick`)")
		}
		p(" on a machine whose load average was %s at the start. The numbers only show that the harness works; ", m.LoadStart)
		p("run the full command (see [benchmarks/README.md](benchmarks/README.md)) on a quiet machine to publish.\n\n")
	}
	if busy := busyMachine(m); busy != "" && !o.smoke() {
		p("> **Warning: the machine was busy** (%s). Timings from a busy machine are unreliable; rerun on a quiet one before publishing.\n\n", busy)
	}
	p("preflight is measured bytes in → result out (`CheckJSON`, `DecideJSON`). ")
	p("The peers get the request body and the schema, extracted once from each corpus file outside the timed loop, as bytes, and parse them inside the loop. ")
	p("\"Cold\" means the schema arrives with the request and is compiled (santhosh-tekuri) or resolved (google) on every call; preflight cold runs with its cache of compiled schemas off. ")
	p("\"Warm\" means the schema was compiled once before the timed loop: the peers keep the compiled form, preflight finds it in its cache by the schema's text (the request is still parsed and hashed whole). The floors are `encoding/json` Unmarshal of the whole request into `any` and SHA-256 over the same bytes. ")
	if o.Count == 1 {
		p("Every figure comes from a single run; ")
	} else {
		p("Every figure is benchstat's median of %d runs, and every pass/fail compares medians; ", o.Count)
	}
	p("the corpus is `testdata/bench/`.\n\n")

	p("## Machine\n\n| | |\n|---|---|\n")
	p("| CPU | %s |\n| Logical CPUs | %d (GOMAXPROCS %d) |\n| Go | %s |\n| OS | %s |\n", m.CPU, m.Cores, runtime.GOMAXPROCS(0), m.GoVersion, m.OS)
	p("| Date | %s |\n", m.Date.Format(time.RFC3339))
	if m.Commit != "" {
		dirty := ""
		if m.Dirty {
			dirty = " (with uncommitted changes)"
		}
		p("| Commit | %s%s |\n", m.Commit, dirty)
	}
	p("| Load average (1/5/15 min) | %s at start, %s at end (the run's own load raises it) |\n", m.LoadStart, m.LoadEnd)
	if m.OthersKnown {
		p("| Other processes' CPU during the run | %.2f CPUs on average |\n", m.Others)
	}
	p("| Runs | count=%d, benchtime=%s, `-benchmem`, passes interleaved |\n\n", o.Count, o.BenchTime)

	r.targets(p)
	if r.check != nil {
		r.checkSection(p)
	}
	if r.decide != nil {
		r.decideSection(p)
	}
	if r.tools != nil {
		r.toolSection(p)
	}
	if !o.SkipLoad {
		r.loadSection(p)
	}
	r.proxySection(p)
	if len(r.profiles) > 0 {
		r.profileSection(p)
	}
	if len(r.benchstatText) > 0 {
		p("## benchstat output\n\n<details><summary>Full benchstat tables (time, B/op, allocs/op; \"vs base\" is against preflight)</summary>\n\n```\n")
		for _, t := range r.benchstatText {
			p("%s\n", strings.TrimRight(t, "\n"))
		}
		p("```\n\n</details>\n\n")
	}
	p("## Reproduce\n\n```\nbenchmarks/run.sh            # full run, regenerates this file\nbenchmarks/run.sh -quick     # smoke run\n```\n\n")
	p("Raw `go test -bench` output of this run: [%s](%s).\n", r.relLink(filepath.Join(o.ResultsDir, "raw.txt")), r.relLink(filepath.Join(o.ResultsDir, "raw.txt")))
	return b.Bytes(), nil
}

func (r *results) targets(p func(string, ...any)) {
	p("## Targets\n\n| Target | Measured | Verdict |\n|---|---|---|\n")
	if t := r.check; t != nil {
		cold := newRatioStats(t, true, targetColdSpeedup, ratio(t, benchmarks.ImplSanthoshCold, benchmarks.ImplPreflight))
		p("| `Check` at least %.0f× faster than santhosh-tekuri compile+validate, every case | worst %s (%s), geomean %s over %d cases | %s |\n",
			targetColdSpeedup, fmtRatio(cold.Worst), cold.WorstCase, fmtRatio(cold.Geomean), cold.N, verdict(cold.N > 0, cold.AllPass))
		for _, peer := range []string{benchmarks.ImplSanthoshWarm, benchmarks.ImplGoogleWarm} {
			warm := newRatioStats(t, true, targetWarmSpeedup, ratio(t, peer, benchmarks.ImplPreflightWarm))
			p("| warm `Check` (schema in the cache) faster than %s, every case | worst %s (%s), geomean %s over %d cases | %s |\n",
				implShort[peer], fmtRatio(warm.Worst), warm.WorstCase, fmtRatio(warm.Geomean), warm.N, verdict(warm.N > 0, warm.AllPass))
		}
		floor := newRatioStats(t, false, targetFloorRatio, ratio(t, benchmarks.ImplPreflight, benchmarks.ImplUnmarshal))
		p("| `Check` no slower than `encoding/json` Unmarshal of the same bytes, every case (time ratio ≤ 1) | worst %s (%s), geomean %s over %d cases | %s |\n",
			fmtRatio(floor.Worst), floor.WorstCase, fmtRatio(floor.Geomean), floor.N, verdict(floor.N > 0, floor.AllPass))
	} else {
		p("| `Check` targets | – | not measured |\n")
	}
	if t := r.decide; t != nil {
		f := ratio(t, benchmarks.ImplPreflight, benchmarks.ImplUnmarshal)
		for _, c := range []string{"history_000", "history_100"} {
			v, ok := f(c)
			p("| `Decide` (%s) no slower than the Unmarshal floor of the same bytes (time ratio ≤ 1) | %s | %s |\n",
				c, fmtRatio(v), verdict(ok, v <= targetFloorRatio))
		}
	} else {
		p("| `Decide` targets | – | not measured |\n")
	}
	r.toolTargets(p)
	if len(r.load) == 0 {
		p("| preflightd req/s at least %.1f× a bare net/http + Unmarshal server, every body, 1 and 4 cores | – | not measured |\n", targetServerRatio)
	}
	for _, l := range r.load {
		p("| preflightd req/s at least %.1f× the bare server, %s, `%s` %s | %s | %s |\n",
			targetServerRatio, l.Mode.Name, l.Target.Route, l.Target.Name, fmtRatio(l.Ratio), verdict(l.Ratio > 0, l.Ratio >= targetServerRatio))
	}
	r.proxyTargets(p)
	p("\nNo result is cached: the library and the server keep only compiled schemas between calls, and a cached schema gives the same answer, byte for byte, as one compiled afresh.\n\n")
}

func (r *results) checkSection(p func(string, ...any)) {
	t := r.check
	names := checkImplNames()
	p("## Check: time per call\n\n")
	if r.checkChart != "" {
		p("![Check: time per call of preflight and the peers, per case, log scale](%s)\n\n", r.relLink(r.checkChart))
	}
	implTable(p, t, names, func(mm *metrics) (string, bool) { return formatNs(mm.NsPerOp), mm.HasNs })
	p("| **geomean** |")
	for _, n := range names {
		var v []float64
		for _, c := range t.Cases {
			v = append(v, t.get(c, n).NsPerOp)
		}
		if g := geomean(v); g > 0 {
			p(" **%s** |", formatNs(g))
		} else {
			p(" – |")
		}
	}
	p("\n\nColumns: ")
	for i, ci := range benchmarks.CheckImpls {
		if i > 0 {
			p("; ")
		}
		p("*%s* = %s", implShort[ci.Name], ci.Label)
	}
	p(".\n\n")

	p("### Check: ratios\n\n")
	p("Speed-ups are peer time ÷ preflight time (higher is better); the floor ratio is preflight time ÷ Unmarshal time (≤ 1 meets the target).\n\n")
	cold := newRatioStats(t, true, targetColdSpeedup, ratio(t, benchmarks.ImplSanthoshCold, benchmarks.ImplPreflight))
	google := newRatioStats(t, true, 0, ratio(t, benchmarks.ImplGoogleCold, benchmarks.ImplPreflight))
	jcs := newRatioStats(t, true, 0, ratio(t, benchmarks.ImplJCSSHA256, benchmarks.ImplPreflight))
	floor := newRatioStats(t, false, targetFloorRatio, ratio(t, benchmarks.ImplPreflight, benchmarks.ImplUnmarshal))
	warmS := newRatioStats(t, true, targetWarmSpeedup, ratio(t, benchmarks.ImplSanthoshWarm, benchmarks.ImplPreflightWarm))
	warmG := newRatioStats(t, true, targetWarmSpeedup, ratio(t, benchmarks.ImplGoogleWarm, benchmarks.ImplPreflightWarm))
	sha := newRatioStats(t, false, 0, ratio(t, benchmarks.ImplPreflight, benchmarks.ImplSHA256))
	shaWarm := newRatioStats(t, false, 0, ratio(t, benchmarks.ImplPreflightWarm, benchmarks.ImplSHA256))
	p("| case | vs santhosh cold (target ≥ %.0f×) | vs google cold | vs JCS + SHA-256 | preflight ÷ Unmarshal (target ≤ 1) | warm vs santhosh warm (target > 1) | warm vs google warm (target > 1) | cold ÷ SHA-256 | warm ÷ SHA-256 |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n", targetColdSpeedup)
	for _, c := range t.Cases {
		p("| %s | %s %s | %s | %s | %s %s | %s %s | %s %s | %s | %s |\n", c,
			fmtRatio(cold.perCase[c]), markIf(cold, c), fmtRatio(google.perCase[c]), fmtRatio(jcs.perCase[c]),
			fmtRatio(floor.perCase[c]), markIf(floor, c), fmtRatio(warmS.perCase[c]), markIf(warmS, c),
			fmtRatio(warmG.perCase[c]), markIf(warmG, c), fmtRatio(sha.perCase[c]), fmtRatio(shaWarm.perCase[c]))
	}
	p("| **geomean** | **%s** | **%s** | **%s** | **%s** | **%s** | **%s** | **%s** | **%s** |\n\n", fmtRatio(cold.Geomean), fmtRatio(google.Geomean), fmtRatio(jcs.Geomean), fmtRatio(floor.Geomean),
		fmtRatio(warmS.Geomean), fmtRatio(warmG.Geomean), fmtRatio(sha.Geomean), fmtRatio(shaWarm.Geomean))
	p("The SHA-256 columns are time ÷ the time of SHA-256 over the same request bytes: ns per byte ÷ SHA-256's ns per byte, the physical floor (requestHash hashes the request's canonical bytes).\n\n")
	r.checkPerByte(p)
	r.checkWarmCPU(p)

	p("### Check: allocations per call\n\n")
	implTable(p, t, names, func(mm *metrics) (string, bool) {
		return fmtBytes(mm.BytesPerOp) + ", " + strconv.FormatFloat(mm.AllocsPerOp, 'f', 0, 64) + " allocs", mm.HasBytes && mm.HasAllocs
	})
	p("\n")
}

// implTable writes a table with one row per case and one column per
// implementation in names; cell renders a measurement, reporting false when
// it is missing (shown as –).
func implTable(p func(string, ...any), t *table, names []string, cell func(*metrics) (string, bool)) {
	p("| case |")
	for _, n := range names {
		p(" %s |", implShort[n])
	}
	p("\n|---|")
	for range names {
		p("---:|")
	}
	p("\n")
	for _, c := range t.Cases {
		p("| %s |", c)
		for _, n := range names {
			if text, ok := cell(t.get(c, n)); ok {
				p(" %s |", text)
			} else {
				p(" – |")
			}
		}
		p("\n")
	}
}

func markIf(rs ratioStats, c string) string {
	if _, ok := rs.perCase[c]; !ok {
		return ""
	}
	return mark(rs.perCasePass[c])
}

func (r *results) decideSection(p func(string, ...any)) {
	t := r.decide
	p("## Decide: time per call\n\n")
	if r.decideChart != "" {
		p("![Decide: time per call of preflight and the Unmarshal floor, log scale](%s)\n\n", r.relLink(r.decideChart))
	}
	p("| case | preflight | Unmarshal floor | preflight ÷ Unmarshal (target ≤ 1) | preflight B/op, allocs | Unmarshal B/op, allocs |\n|---|---:|---:|---:|---:|---:|\n")
	f := ratio(t, benchmarks.ImplPreflight, benchmarks.ImplUnmarshal)
	for _, c := range t.Cases {
		a, u := t.get(c, benchmarks.ImplPreflight), t.get(c, benchmarks.ImplUnmarshal)
		v, ok := f(c)
		mk := ""
		if ok {
			mk = " " + mark(v <= targetFloorRatio)
		}
		p("| %s | %s | %s | %s%s | %s, %.0f | %s, %.0f |\n", c, formatNs(a.NsPerOp), formatNs(u.NsPerOp), fmtRatio(v), mk,
			fmtBytes(a.BytesPerOp), a.AllocsPerOp, fmtBytes(u.BytesPerOp), u.AllocsPerOp)
	}
	p("\n")
}

func (r *results) loadSection(p func(string, ...any)) {
	o := r.opts
	p("## Server load\n\n")
	p("`preflightd`, built as a user builds it and run with its defaults (access log on, written to a file; no metrics listener), ")
	p("against `floorserver`, a bare `net/http` server that reads the body under the same 64 KiB limit, unmarshals it into `any` with `encoding/json` and writes a fixed %d-byte JSON answer. ", 300)
	p("Each is a process of its own on 127.0.0.1. The generator, in the report's process, keeps its keep-alive HTTP/1.1 connections each with one request in flight (a closed loop) ")
	p("and measures each server for %s per round after an uncounted warm-up, %d round(s), alternating which server goes first. ", o.LoadDuration, o.LoadRounds)
	p("Every answer must be 200. req/s is the median over rounds; p50/p99 are over every measured request; CPU/req is the server process's user+system CPU time per request (warm-up included in both). ")
	if r.machine.Cores < 2 {
		p("**1 core**: the server with GOMAXPROCS=1 pinned with `taskset` to CPU 0, the generator on the same CPU (this machine has one), %d connections. ", o.LoadClients)
	} else {
		p("**1 core**: the server with GOMAXPROCS=1 pinned with `taskset` to CPU 0, the generator pinned to CPU 1 with GOMAXPROCS=1, %d connections. ", o.LoadClients)
	}
	p("**4 cores**: the server with GOMAXPROCS=4, nothing pinned, %d connections", 4*o.LoadClients)
	if r.machine.Cores < 4 {
		p(" (this machine has %d CPUs, shared by server and generator)", r.machine.Cores)
	}
	p(".\n\n")
	if o.LoadBaseline != "" {
		p("A third server, `%s`, is the binary `%s` run the same way and measured in the same rounds; its ratios are to the bare server too. ", serverBaseline, filepath.Base(o.LoadBaseline))
	}
	p("The last column divides the bare server's CPU/req by preflightd's: the req/s ratio the servers' own CPU time allows, steadier than req/s when other work shares the machine.\n\n")
	p("| cores | route | body | server | req/s | p50 | p99 | CPU/req | requests | preflightd ÷ bare req/s (target ≥ %.1f) | bare ÷ preflightd CPU/req |\n|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n", targetServerRatio)
	for _, l := range r.load {
		rows := []loadSide{l.Preflight, l.Bare}
		if l.Baseline.Server != "" {
			rows = append(rows, l.Baseline)
		}
		for i, s := range rows {
			ratioCell, cpuCell := "", ""
			switch {
			case i == 0:
				ratioCell = fmtRatio(l.Ratio) + " " + mark(l.Ratio >= targetServerRatio)
				cpuCell = fmtRatio(l.CPURatio)
			case s.Server == serverBaseline:
				ratioCell = fmtRatio(l.BaselineRatio) + " " + mark(l.BaselineRatio >= targetServerRatio)
				cpuCell = fmtRatio(l.BaselineCPURatio)
			}
			p("| %s | `%s` | %s (%s) | %s | %.0f | %s | %s | %s | %d | %s | %s |\n", l.Mode.Name, l.Target.Route, l.Target.Name, fmtBytes(float64(l.BodyBytes)),
				s.Server, s.MedianRPS, fmtDur(s.P50), fmtDur(s.P99), fmtDur(s.CPUPerReq), s.Requests, ratioCell, cpuCell)
		}
	}
	p("\n")
}

func fmtDur(d time.Duration) string { return formatNs(float64(d.Nanoseconds())) }

func (r *results) profileSection(p func(string, ...any)) {
	p("## Profiles\n\n")
	p("CPU and memory profiles of preflight's `CheckJSON` (separate runs; memory sampled at every allocation), focused on the measured call. ")
	p("Files are in the scratch directory `%s` (not committed).\n\n", r.opts.ProfileDir)
	for _, pr := range r.profiles {
		p("<details><summary>%s: top 12 by cumulative CPU, top 12 by allocated bytes</summary>\n\n```\n%s\n```\n\n```\n%s\n```\n\n</details>\n\n",
			pr.Case, topLines(pr.CPUTop, 12), topLines(pr.AllocsTop, 12))
	}
}

// othersBusy is the CPU other processes may take on average during a
// run before the machine counts as busy: a tenth of a CPU.
const othersBusy = 0.1

// busyMachine says why the machine was busy during the run, or "" when it
// was not: a 1-minute load average above its CPUs at the start (before the
// run's own work), or other processes taking more than othersBusy CPUs
// during it. The load average at the end counts only when the other
// processes' CPU is not known, since the run's own load generators and
// servers raise it.
func busyMachine(m machine) string {
	var why []string
	overloaded := func(load, when string) {
		if l, ok := loadOf(load); ok && l > float64(m.Cores) {
			why = append(why, fmt.Sprintf("1-minute load average %s on %d CPUs at the %s", strconv.FormatFloat(l, 'f', -1, 64), m.Cores, when))
		}
	}
	overloaded(m.LoadStart, "start")
	switch {
	case !m.OthersKnown:
		overloaded(m.LoadEnd, "end")
	case m.Others > othersBusy:
		why = append(why, fmt.Sprintf("other processes kept %.2f CPUs busy on average during the run", m.Others))
	}
	return strings.Join(why, "; ")
}

// loadOf reads the 1-minute average of a LoadStart or LoadEnd.
func loadOf(l string) (float64, bool) {
	f := strings.Fields(l)
	if len(f) == 0 {
		return 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	return v, err == nil
}
