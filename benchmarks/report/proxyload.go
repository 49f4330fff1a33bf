package report

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// The proxy comparison is the benchmark BenchmarkToolCall of
// server/internal/mcpproxy, run in the server module (the package is
// internal to it): one MCP Go SDK client calls a fast read-only tool of an
// in-process upstream directly and through the proxy, alternately, and the
// benchmark reports the percentiles of both and their differences. Its
// test binary is built once and run in each of proxyModes.

// proxyBench is the benchmark and package the comparison runs.
const (
	proxyBench   = "BenchmarkToolCall"
	proxyPackage = "./internal/mcpproxy"
)

// proxyCases are the benchmark's cases, in the order shown.
var proxyCases = []string{"run/h0", "run/h100", "reuse/h0", "reuse/h100"}

// targetProxyAddedP50 is the target of the proxy's added latency at p50,
// in microseconds, for a call that runs and for a reuse.
const targetProxyAddedP50 = 100.0

// proxyCase is one case as measured, latencies in microseconds: direct,
// through a bare HTTP relay (httputil.ReverseProxy) and through the
// proxy; Added is proxied minus direct, Hop relayed minus direct (the
// floor of a proxy that forwards over HTTP).
type proxyCase struct {
	Name                 string // such as "run/h100"
	Mode                 string // the CPUs it ran on: proxyModes' Name
	Calls                int    // each way
	DirectP50, DirectP90 float64
	RelayP50, RelayP90   float64
	ProxyP50, ProxyP90   float64
	AddedP50, AddedP90   float64
	HopP50, HopP90       float64
}

// proxyResult is the proxy comparison of a run.
type proxyResult struct {
	Modes   []proxyMode // the modes tried, in order
	Cases   []proxyCase // by mode, then as proxyCases
	Skipped []string    // modes not run, and why
}

// A proxyMode is a setting of the CPUs the proxy benchmark runs on.
type proxyMode struct {
	Name string // as shown
	CPU  int    // pin the benchmark to this CPU with taskset, GOMAXPROCS=1; -1 leaves it unpinned
}

// proxyModes are the settings of the proxy comparison: the process
// unpinned, with every CPU; and pinned to one CPU with GOMAXPROCS=1, as
// the issue that set the target measured (each process on one core). The
// pinned CPU is the first this process may run on.
func proxyModes(cores int) []proxyMode {
	if cores < 2 {
		return []proxyMode{{Name: "1 CPU", CPU: -1}}
	}
	return []proxyMode{{Name: fmt.Sprintf("%d CPUs", cores), CPU: -1}, {Name: "1 core", CPU: firstAllowedCPU()}}
}

// firstAllowedCPU returns the first CPU of this process's affinity list
// (Cpus_allowed_list in /proc/self/status, such as "2-3,6"), or 0 when it
// cannot be read.
func firstAllowedCPU() int {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	return parseFirstCPU(string(data))
}

// parseFirstCPU reads the first CPU of a /proc/self/status text's
// Cpus_allowed_list; 0 when there is none.
func parseFirstCPU(status string) int {
	for _, line := range strings.Split(status, "\n") {
		if list, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			first := strings.TrimSpace(list)
			if i := strings.IndexAny(first, "-,"); i >= 0 {
				first = first[:i]
			}
			if n, err := strconv.Atoi(first); err == nil && n >= 0 {
				return n
			}
		}
	}
	return 0
}

// wantProxyCase reports whether the run's Cases filter keeps the proxy
// case name (no filter keeps every case).
func wantProxyCase(o Options, name string) bool {
	return o.Cases == "" || regexp.MustCompile(o.Cases).MatchString(name)
}

// runProxy runs the proxy benchmark; nil when the Cases filter keeps none
// of its cases.
func runProxy(ctx context.Context, o Options, goBin string) (*proxyResult, error) {
	keep := 0
	for _, c := range proxyCases {
		if wantProxyCase(o, c) {
			keep++
		}
	}
	if keep == 0 {
		return nil, nil
	}
	serverDir := filepath.Join(filepath.Dir(o.ModuleDir), "server")
	dir, err := os.MkdirTemp("", "preflight-proxy-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "mcpproxy.test")
	if _, err := command(ctx, serverDir, goBin, "test", "-c", "-o", bin, proxyPackage); err != nil {
		return nil, err
	}
	r := &proxyResult{Modes: proxyModes(runtime.NumCPU())}
	for _, mode := range r.Modes {
		args := []string{"-test.run", "^$", "-test.bench", "^" + proxyBench + "$",
			"-test.benchtime", strconv.Itoa(o.ProxyCalls) + "x", "-test.count", "1", "-test.timeout", "30m"}
		name := bin
		if mode.CPU >= 0 {
			taskset, err := exec.LookPath("taskset")
			if err != nil {
				r.Skipped = append(r.Skipped, mode.Name+": no taskset to pin the benchmark")
				continue
			}
			name, args = taskset, append([]string{"-c", strconv.Itoa(mode.CPU), bin, "-test.cpu", "1"}, args...)
		}
		logf(o, "proxy comparison, %s: %s, %d calls each way per case", mode.Name, proxyBench, o.ProxyCalls)
		out, err := command(ctx, filepath.Join(serverDir, proxyPackage), name, args...)
		if err != nil && mode.CPU >= 0 && ctx.Err() == nil {
			// taskset may be refused the CPU (a container's CPU set): the
			// unpinned results stand.
			r.Skipped = append(r.Skipped, fmt.Sprintf("%s: %s", mode.Name, firstLine(err.Error())))
			continue
		}
		if err != nil {
			return nil, err
		}
		cases, err := parseProxyBench(out)
		if err != nil {
			return nil, err
		}
		for _, c := range cases {
			if wantProxyCase(o, c.Name) {
				c.Mode = mode.Name
				r.Cases = append(r.Cases, c)
			}
		}
	}
	return r, nil
}

// parseProxyBench reads the benchmark's result lines, such as
//
//	BenchmarkToolCall/run/h0-2  1000  2232487 ns/op  529.7 added-p50-µs  2159 added-p90-µs ...
//
// (a line another goroutine logged may come between the name and the
// figures), and fails unless every case is there with every metric.
func parseProxyBench(out []byte) ([]proxyCase, error) {
	byName := map[string]proxyCase{}
	pending := "" // a case whose figures are on a later line
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		var name string
		switch {
		case strings.HasPrefix(f[0], proxyBench+"/"):
			name = strings.TrimPrefix(f[0], proxyBench+"/")
			if i := strings.LastIndexByte(name, '-'); i > 0 { // the GOMAXPROCS suffix
				if _, err := strconv.Atoi(name[i+1:]); err == nil {
					name = name[:i]
				}
			}
			f = f[1:]
			if len(f) == 0 || !isCount(f[0]) {
				pending = name
				continue
			}
		case pending != "" && isCount(f[0]):
			name = pending
		default:
			continue
		}
		pending = ""
		c, err := proxyFigures(name, f, sc.Text())
		if err != nil {
			return nil, err
		}
		byName[name] = c
	}
	cases := make([]proxyCase, 0, len(proxyCases))
	for _, n := range proxyCases {
		c, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("report: the proxy benchmark did not report case %s:\n%s", n, tail(out, 3000))
		}
		cases = append(cases, c)
	}
	return cases, nil
}

func isCount(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

// proxyFigures reads the figures of case name: the iteration count, then
// value and unit pairs.
func proxyFigures(name string, f []string, line string) (proxyCase, error) {
	calls, _ := strconv.Atoi(f[0])
	c := proxyCase{Name: name, Calls: calls}
	metrics := map[string]*float64{
		"direct-p50-µs": &c.DirectP50, "direct-p90-µs": &c.DirectP90,
		"relay-p50-µs": &c.RelayP50, "relay-p90-µs": &c.RelayP90,
		"proxy-p50-µs": &c.ProxyP50, "proxy-p90-µs": &c.ProxyP90,
		"added-p50-µs": &c.AddedP50, "added-p90-µs": &c.AddedP90,
		"hop-p50-µs": &c.HopP50, "hop-p90-µs": &c.HopP90,
	}
	seen := 0
	for i := 1; i+1 < len(f); i += 2 {
		if dst, ok := metrics[f[i+1]]; ok {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return c, fmt.Errorf("report: proxy benchmark %s: %s is not a number: %q", name, f[i+1], f[i])
			}
			*dst = v
			seen++
		}
	}
	if seen != len(metrics) {
		return c, fmt.Errorf("report: proxy benchmark %s: %d of its %d metrics in %q", name, seen, len(metrics), line)
	}
	return c, nil
}

// judgedMode is the name of the mode the target is judged in: the mode
// pinned to one core with GOMAXPROCS=1 when it ran, the method of the
// issue that set the target (each process on one core); "" judges every
// mode (a machine with one CPU has only the unpinned one).
func (pr *proxyResult) judgedMode() string {
	for _, m := range pr.Modes {
		if m.CPU >= 0 && slices.ContainsFunc(pr.Cases, func(c proxyCase) bool { return c.Mode == m.Name }) {
			return m.Name
		}
	}
	return ""
}

// judged reports whether case c counts towards the target.
func (pr *proxyResult) judged(c proxyCase) bool {
	m := pr.judgedMode()
	return m == "" || c.Mode == m
}

// proxyTargets writes the Targets rows of the proxy: its added latency at
// p50 for a call that runs and for a reuse, the worse of the histories,
// in the judged mode; the other modes' figures follow, not judged.
func (r *results) proxyTargets(p func(string, ...any)) {
	for _, kind := range []string{"run", "reuse"} {
		what := map[string]string{"run": "a call that runs", "reuse": "a reuse"}[kind]
		var cells, others []string
		worst, n := 0.0, 0
		if r.proxy != nil {
			for _, c := range r.proxy.Cases {
				if !strings.HasPrefix(c.Name, kind+"/") {
					continue
				}
				cell := fmt.Sprintf("%s µs (%s, %s)", fmtMicros(c.AddedP50), c.Name, c.Mode)
				if !r.proxy.judged(c) {
					others = append(others, cell)
					continue
				}
				cells = append(cells, cell)
				if n == 0 || c.AddedP50 > worst {
					worst = c.AddedP50
				}
				n++
			}
		}
		measured := "–"
		if n > 0 {
			measured = strings.Join(cells, ", ")
		}
		if len(others) > 0 {
			measured += "; not judged, unpinned: " + strings.Join(others, ", ")
		}
		p("| `preflightd proxy` adds at most %.0f µs at p50 to %s, against the same call made directly | %s | %s |\n",
			targetProxyAddedP50, what, measured, verdict(n > 0, worst <= targetProxyAddedP50))
	}
}

// proxySection writes the proxy comparison.
func (r *results) proxySection(p func(string, ...any)) {
	if r.proxy == nil || len(r.proxy.Cases) == 0 {
		return
	}
	p("## Proxy\n\n")
	p("`%s` in `server/internal/mcpproxy`, its test binary built once in the server module and run in each mode below: ", proxyBench)
	p("the same MCP Go SDK client calls `market_quote` (a fast read-only tool of `agent/mcpguard/mcptest`) over Streamable HTTP, directly on the upstream server and through the proxy, one call each way per iteration, which one goes first alternating, so both see the same load. ")
	p("A call that runs has a new symbol each time (the proxy decides, forwards, saves and records it); a reuse repeats one symbol (the proxy answers with the saved result, the direct call runs upstream). ")
	p("h0: no other call in the proxy session's history (a fresh session for each call that runs, its tools listed beforehand); h100: 100 entries, the most a session keeps. ")
	p("A third call each iteration goes through a bare HTTP relay (`httputil.ReverseProxy`, flushing at once) in front of the same upstream: the cost of one more HTTP hop with no MCP in it, the floor of any proxy that forwards a call over HTTP (a reuse is not forwarded). ")
	p("Added latency is the proxied percentile minus the direct one; the hop is the relayed minus the direct one. Client, relay, proxy and upstream share the process. ")
	if modes := r.proxy.Modes; len(modes) > 1 {
		p("Modes: all %d CPUs, unpinned; and 1 core, pinned with `taskset` to CPU %d with GOMAXPROCS=1, as the target's issue measured (each process on one core; here the four share it). ", r.machine.Cores, modes[1].CPU)
		p("The hop does the same work in both; where it costs more unpinned, the difference is the cost of waking a goroutine on another CPU. ")
		if m := r.proxy.judgedMode(); m != "" {
			p("The target is judged in the %s mode, the issue's method; the unpinned rows are shown and not judged (no mark), since there the hop alone, which no proxy forwarding over HTTP avoids, carries the cost of those wake-ups.", m)
		}
		p("\n\n")
	} else {
		p("Mode: the machine's one CPU.\n\n")
	}
	for _, s := range r.proxy.Skipped {
		p("Not run: %s.\n\n", s)
	}
	p("| case | CPUs | calls each way | direct p50 | relayed p50 | proxied p50 | hop p50 | added p50 (target ≤ %.0f µs) | direct p90 | relayed p90 | proxied p90 | hop p90 | added p90 |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n", targetProxyAddedP50)
	for _, c := range r.proxy.Cases {
		p("| %s | %s | %d | %s µs | %s µs | %s µs | %s µs | %s µs%s | %s µs | %s µs | %s µs | %s µs | %s µs |\n", c.Name, c.Mode, c.Calls,
			fmtMicros(c.DirectP50), fmtMicros(c.RelayP50), fmtMicros(c.ProxyP50), fmtMicros(c.HopP50), fmtMicros(c.AddedP50), r.proxyMark(c),
			fmtMicros(c.DirectP90), fmtMicros(c.RelayP90), fmtMicros(c.ProxyP90), fmtMicros(c.HopP90), fmtMicros(c.AddedP90))
	}
	p("\n")
}

// proxyMark is the target's mark for case c's added p50, after a space;
// none for a case not judged.
func (r *results) proxyMark(c proxyCase) string {
	if !r.proxy.judged(c) {
		return ""
	}
	return " " + mark(c.AddedP50 <= targetProxyAddedP50)
}

// fmtMicros writes a latency in microseconds: no fraction from 100 up.
func fmtMicros(v float64) string {
	if v >= 100 || v <= -100 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// firstLine returns s up to its first newline.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
