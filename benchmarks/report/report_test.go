package report

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestQuickRun runs the whole generator in quick mode on two cases, with a
// profile and a short load round, so that the harness cannot rot. It
// checks the shape of the output, never its numbers.
func TestQuickRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the benchmarks")
	}
	dir := t.TempDir()
	o := Options{
		ModuleDir:    "..",
		Out:          filepath.Join(dir, "BENCHMARKS.md"),
		ResultsDir:   filepath.Join(dir, "results"),
		Quick:        true,
		BenchTime:    "5ms",
		Cases:        "web_search_valid|history_000",
		ProfileDir:   filepath.Join(dir, "profiles"),
		ProfileCases: []string{"web_search_valid"},
		LoadDuration: 50_000_000, // 50ms
	}
	if err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(o.Out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Smoke run",
		"## Machine",
		"## Targets",
		"| web_search_valid |",
		"| history_000 |",
		"![Check: time per call",
		"results/check.svg",
		"POST /v0.2/preflight/tool-call",
		"POST /check-request",
		"bare net/http + Unmarshal",
		"### Check: ns per byte against SHA-256",
		"### Check: CPU time per call",
		"## Tool schemas: arguments against real MCP tool schemas",
		"| empty |",
		"| typed |",
		"| 1 core |",
		"| 4 cores |",
		"## Profiles",
		"## benchstat output",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("BENCHMARKS.md lacks %q", want)
		}
	}
	// Four Check targets (cold, two warm, floor), Decide on history_000,
	// the tool schemas' two rows and every server body at 1 and 4 cores
	// have verdicts; Decide on history_100 is outside the subset.
	want := 7 + 2*len(loadTargets)
	if n := strings.Count(string(md), "| **pass** |") + strings.Count(string(md), "| **FAIL** |"); n != want {
		t.Errorf("targets with a verdict = %d, want %d:\n%s", n, want, md)
	}
	for _, f := range []string{"results/raw.txt", "results/benchstat.txt", "results/check.svg", "results/decide.svg",
		"profiles/check_web_search_valid.cpu.pprof", "profiles/check_web_search_valid.mem.pprof",
		"profiles/check_web_search_valid.cpu.top.txt"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("missing output: %v", err)
		}
	}
}
