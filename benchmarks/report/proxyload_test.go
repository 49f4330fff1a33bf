package report

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const proxyBenchOutput = `goos: linux
pkg: github.com/agentpreflight/preflight/server/internal/mcpproxy
BenchmarkToolCall/run/h0-2         	    1000	   2232487 ns/op	       529.7 added-p50-µs	      2159 added-p90-µs	       351.7 direct-p50-µs	      1407 direct-p90-µs	       881.4 proxy-p50-µs	      3565 proxy-p90-µs
BenchmarkToolCall/run/h100-2       	    1000	   3234973 ns/op	       835.6 added-p50-µs	      3803 added-p90-µs	       261.8 direct-p50-µs	      1931 direct-p90-µs	      1097 proxy-p50-µs	      5734 proxy-p90-µs
BenchmarkToolCall/reuse/h0-2       	    1000	   1423733 ns/op	        20.61 added-p50-µs	      -263.3 added-p90-µs	       264.1 direct-p50-µs	      1682 direct-p90-µs	       284.7 proxy-p50-µs	      1418 proxy-p90-µs
BenchmarkToolCall/reuse/h100-2     	    1000	   1701104 ns/op	         7.732 added-p50-µs	        41.73 added-p90-µs	       292.3 direct-p50-µs	      1721 direct-p90-µs	       300.1 proxy-p50-µs	      1763 proxy-p90-µs
PASS
`

func TestParseProxyBench(t *testing.T) {
	got, err := parseProxyBench([]byte(proxyBenchOutput))
	if err != nil {
		t.Fatal(err)
	}
	want := []proxyCase{
		{"run/h0", 1000, 351.7, 1407, 881.4, 3565, 529.7, 2159},
		{"run/h100", 1000, 261.8, 1931, 1097, 5734, 835.6, 3803},
		{"reuse/h0", 1000, 264.1, 1682, 284.7, 1418, 20.61, -263.3},
		{"reuse/h100", 1000, 292.3, 1721, 300.1, 1763, 7.732, 41.73},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, bad := range []struct{ name, out string }{
		{"a case missing", strings.Replace(proxyBenchOutput, "reuse/h0-2", "other/h0-2", 1)},
		{"a metric missing", strings.Replace(proxyBenchOutput, "added-p90-µs", "other-µs", 1)},
		{"a metric not a number", strings.Replace(proxyBenchOutput, "529.7 added", "x added", 1)},
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
	r.proxy = &proxyResult{Cases: cases}
	r.proxyTargets(p)
	r.proxySection(p)
	got := b.String()
	for _, want := range []string{
		"to a call that runs, against the same call made directly | 530 µs (run/h0), 836 µs (run/h100) | **FAIL** |",
		"to a reuse, against the same call made directly | 20.6 µs (reuse/h0), 7.7 µs (reuse/h100) | **pass** |",
		"## Proxy",
		"| reuse/h0 | 1000 | 264 µs | 285 µs | 20.6 µs ✅ | 1682 µs | 1418 µs | -263 µs |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q:\n%s", want, got)
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
	if len(res.Cases) != len(proxyCases) {
		t.Fatalf("%d cases, want %d", len(res.Cases), len(proxyCases))
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
