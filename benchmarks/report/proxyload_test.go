package report

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const proxyBenchOutput = `goos: linux
pkg: github.com/agentpreflight/preflight/server/internal/mcpproxy
BenchmarkToolCall/run/h0-2         	     300	   4597255 ns/op	       592.6 added-p50-µs	      1378 added-p90-µs	       352.7 direct-p50-µs	      2086 direct-p90-µs	       151.8 hop-p50-µs	        38.92 hop-p90-µs	       945.3 proxy-p50-µs	      3465 proxy-p90-µs	       504.5 relay-p50-µs	      2125 relay-p90-µs
BenchmarkToolCall/run/h100-2       	     300	   2371038 ns/op	       483.2 added-p50-µs	      1959 added-p90-µs	       199.6 direct-p50-µs	       850.7 direct-p90-µs	       177.5 hop-p50-µs	       989.8 hop-p90-µs	       682.8 proxy-p50-µs	      2810 proxy-p90-µs	       377.1 relay-p50-µs	      1841 relay-p90-µs
BenchmarkToolCall/reuse/h0-2       	2026/11/27 08:13:59 a log line of another goroutine
     300	   1783827 ns/op	        10.60 added-p50-µs	        14.16 added-p90-µs	       233.0 direct-p50-µs	      1023 direct-p90-µs	       147.5 hop-p50-µs	       829.4 hop-p90-µs	       243.6 proxy-p50-µs	      1037 proxy-p90-µs	       380.6 relay-p50-µs	      1852 relay-p90-µs
BenchmarkToolCall/reuse/h100-2     	     300	   5246937 ns/op	        -5.678 added-p50-µs	       -43.48 added-p90-µs	       267.4 direct-p50-µs	      1172 direct-p90-µs	       133.1 hop-p50-µs	      1352 hop-p90-µs	       261.8 proxy-p50-µs	      1128 proxy-p90-µs	       400.5 relay-p50-µs	      2524 relay-p90-µs
PASS
`

func TestParseProxyBench(t *testing.T) {
	got, err := parseProxyBench([]byte(proxyBenchOutput))
	if err != nil {
		t.Fatal(err)
	}
	want := []proxyCase{
		{"run/h0", "", 300, 352.7, 2086, 504.5, 2125, 945.3, 3465, 592.6, 1378, 151.8, 38.92},
		{"run/h100", "", 300, 199.6, 850.7, 377.1, 1841, 682.8, 2810, 483.2, 1959, 177.5, 989.8},
		{"reuse/h0", "", 300, 233.0, 1023, 380.6, 1852, 243.6, 1037, 10.60, 14.16, 147.5, 829.4},
		{"reuse/h100", "", 300, 267.4, 1172, 400.5, 2524, 261.8, 1128, -5.678, -43.48, 133.1, 1352},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, bad := range []struct{ name, out string }{
		{"a case missing", strings.Replace(proxyBenchOutput, "reuse/h0-2", "other/h0-2", 1)},
		{"a metric missing", strings.Replace(proxyBenchOutput, "added-p90-µs", "other-µs", 1)},
		{"a metric not a number", strings.Replace(proxyBenchOutput, "592.6 added", "x added", 1)},
	} {
		if _, err := parseProxyBench([]byte(bad.out)); err == nil {
			t.Errorf("%s: no error", bad.name)
		}
	}
}

func TestProxyTargetsAndSection(t *testing.T) {
	cases, err := parseProxyBench([]byte(proxyBenchOutput))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	r := &results{machine: machine{Cores: 2}}
	r.proxyTargets(p)
	r.proxySection(p)
	if got := b.String(); strings.Count(got, "| not measured |") != 2 || strings.Contains(got, "## Proxy") {
		t.Errorf("without a proxy result: %s", got)
	}
	b.Reset()
	pinned := slices.Clone(cases)
	for i := range cases {
		cases[i].Mode = "2 CPUs"
		pinned[i].Mode = "1 core"
		pinned[i].AddedP50 -= 100
	}
	r.proxy = &proxyResult{Modes: []proxyMode{{"2 CPUs", -1}, {"1 core", 1}}, Cases: append(cases, pinned...), Skipped: []string{"3 cores: for the test"}}
	r.proxyTargets(p)
	r.proxySection(p)
	got := b.String()
	for _, want := range []string{
		"to a call that runs, against the same call made directly | 493 µs (run/h0, 1 core), 383 µs (run/h100, 1 core); not judged, unpinned: 593 µs (run/h0, 2 CPUs), 483 µs (run/h100, 2 CPUs) | **FAIL** |",
		"to a reuse, against the same call made directly | -89.4 µs (reuse/h0, 1 core), -106 µs (reuse/h100, 1 core); not judged, unpinned: 10.6 µs (reuse/h0, 2 CPUs), -5.7 µs (reuse/h100, 2 CPUs) | **pass** |",
		"The target is judged in the 1 core mode, the issue's method;",
		"## Proxy",
		"Not run: 3 cores: for the test.",
		"and 1 core, pinned with `taskset` to CPU 1 with GOMAXPROCS=1,",
		"| reuse/h0 | 2 CPUs | 300 | 233 µs | 381 µs | 244 µs | 148 µs | 10.6 µs | 1023 µs | 1852 µs | 1037 µs | 829 µs | 14.2 µs |",
		"| reuse/h0 | 1 core | 300 | 233 µs | 381 µs | 244 µs | 148 µs | -89.4 µs ✅ |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q:\n%s", want, got)
		}
	}

	// The verdict follows the pinned mode alone when it ran, and every
	// mode when it did not.
	for i := range pinned {
		pinned[i].AddedP50 = 90
	}
	for _, c := range []struct {
		name string
		res  *proxyResult
		want string
	}{
		{"pinned under the target, unpinned over", &proxyResult{Modes: r.proxy.Modes, Cases: append(slices.Clone(cases), pinned...)},
			"| 90.0 µs (run/h0, 1 core), 90.0 µs (run/h100, 1 core); not judged, unpinned: 593 µs (run/h0, 2 CPUs), 483 µs (run/h100, 2 CPUs) | **pass** |"},
		{"the pinned mode not run", &proxyResult{Modes: r.proxy.Modes, Cases: slices.Clone(cases), Skipped: []string{"1 core: taskset refused"}},
			"| 593 µs (run/h0, 2 CPUs), 483 µs (run/h100, 2 CPUs) | **FAIL** |"},
		{"one CPU", &proxyResult{Modes: []proxyMode{{"1 CPU", -1}}, Cases: slices.Clone(pinned)},
			"| 90.0 µs (run/h0, 1 core), 90.0 µs (run/h100, 1 core) | **pass** |"},
	} {
		b.Reset()
		r.proxy = c.res
		r.proxyTargets(p)
		if got := b.String(); !strings.Contains(got, c.want) {
			t.Errorf("%s: lacks %q:\n%s", c.name, c.want, got)
		}
	}
}

// TestProxyRun runs the proxy benchmark briefly, so that the harness and
// the benchmark it reads cannot drift apart.
func TestProxyRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the proxy benchmark")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	o, err := Options{ModuleDir: "..", ProxyCalls: 20}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	res, err := runProxy(context.Background(), o, goBin)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Skipped) > 0 {
		if os.Getenv("CI") == "true" {
			t.Errorf("modes not run in CI: %q", res.Skipped)
		} else {
			t.Logf("modes not run: %q", res.Skipped)
		}
	}
	modes := map[string]int{}
	for _, c := range res.Cases {
		modes[c.Mode]++
	}
	for _, m := range res.Modes {
		if modes[m.Name] != len(proxyCases) && !slices.ContainsFunc(res.Skipped, func(s string) bool { return strings.HasPrefix(s, m.Name+":") }) {
			t.Errorf("mode %s: %d cases, want %d (skipped: %q)", m.Name, modes[m.Name], len(proxyCases), res.Skipped)
		}
	}
	for _, c := range res.Cases {
		if c.Calls != 20 || c.DirectP50 <= 0 || c.ProxyP50 <= 0 || c.DirectP90 < c.DirectP50 || c.ProxyP90 < c.ProxyP50 {
			t.Errorf("%+v", c)
		}
	}
	o.Cases = "web_search_valid|history_000"
	if res, err := runProxy(context.Background(), o, goBin); err != nil || res != nil {
		t.Errorf("with a filter that keeps no proxy case: %+v, %v", res, err)
	}
}

func TestParseFirstCPU(t *testing.T) {
	for _, tt := range []struct {
		status string
		want   int
	}{
		{"Name:\tx\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\n", 0},
		{"Cpus_allowed_list:\t2-3,6\n", 2},
		{"Cpus_allowed_list:\t5\n", 5},
		{"Cpus_allowed_list:\t7,9-11\n", 7},
		{"Cpus_allowed_list:\t\n", 0},
		{"Name:\tx\n", 0},
	} {
		if got := parseFirstCPU(tt.status); got != tt.want {
			t.Errorf("parseFirstCPU(%q) = %d, want %d", tt.status, got, tt.want)
		}
	}
}
