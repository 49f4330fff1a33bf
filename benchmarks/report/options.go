// Package report runs the preflight benchmarks, the peers and the server
// load comparison, summarizes them with benchstat and writes BENCHMARKS.md
// with its charts. Every number in the output comes from the run.
package report

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ModulePath is the module path of the benchmarks module.
const ModulePath = "github.com/agentpreflight/preflight/benchmarks"

// Options configures a run. Zero fields take the defaults noted; the zero
// value is a full run from the current directory.
type Options struct {
	// ModuleDir is the directory of the benchmarks module. Empty means find
	// it from the working directory (it or its benchmarks/ subdirectory or
	// any parent).
	ModuleDir string
	// Out is the Markdown file to write. Empty means BENCHMARKS.md in the
	// parent of ModuleDir (the repository root).
	Out string
	// ResultsDir receives the raw benchmark output, the benchstat tables
	// and the charts. Empty means ModuleDir/results.
	ResultsDir string

	// Quick is the smoke-test mode: count 1, a short benchtime, one short
	// load round, and the output marked as a smoke run.
	Quick bool
	// Count is how many times every benchmark runs. Zero means 6 (1 when
	// Quick). A count under 6 marks the output as a smoke run, since
	// benchstat needs 6 samples for a confidence interval.
	Count int
	// BenchTime is the go test -benchtime of each benchmark. Empty means
	// 500ms (20ms when Quick).
	BenchTime string
	// Cases is a regular expression on case names (such as
	// "web_search_valid|history_000"); empty means every case.
	Cases string

	// ProfileDir, when set, receives CPU and memory profiles of preflight's
	// Check on ProfileCases and their pprof -top summaries.
	ProfileDir string
	// ProfileCases are the check cases profiled. Nil means array_200_valid
	// and object_40_valid.
	ProfileCases []string

	// SkipLoad leaves out the server load comparison.
	SkipLoad bool
	// LoadClients is the number of concurrent keep-alive clients against
	// the server on one core; the 4-core mode uses four times as many.
	// Zero means 64.
	LoadClients int
	// LoadDuration is the measured time of each server in each round. Zero
	// means 2s (200ms when Quick).
	LoadDuration time.Duration
	// LoadRounds is how many times each server is measured, alternating
	// which goes first. Zero means 3 (1 when Quick).
	LoadRounds int
	// LoadBodies is a regular expression on the names of the server
	// comparison's bodies (such as "history_000"); empty means every body.
	LoadBodies string
	// LoadModes is a regular expression on the names of its modes ("1
	// core", "4 cores"); empty means both.
	LoadModes string
	// LoadBaseline is another preflightd binary (one built from an earlier
	// commit, say) measured in the same rounds as a third server,
	// "preflightd (baseline)": before and after side by side in one run.
	// Empty means none.
	LoadBaseline string

	// SkipProxy leaves out the proxy comparison (proxyload.go), which
	// Cases also filters by its case names (such as "run/h100").
	SkipProxy bool
	// ProxyCalls is how many calls the proxy comparison makes each way
	// in each case. Zero means 2000 (100 when Quick).
	ProxyCalls int

	// Log receives progress lines. Nil means discard.
	Log io.Writer
}

// withDefaults fills in the zero fields.
func (o Options) withDefaults() (Options, error) {
	if o.ModuleDir == "" {
		dir, err := findModuleDir()
		if err != nil {
			return o, err
		}
		o.ModuleDir = dir
	}
	abs, err := filepath.Abs(o.ModuleDir)
	if err != nil {
		return o, err
	}
	o.ModuleDir = abs
	if o.Out == "" {
		o.Out = filepath.Join(filepath.Dir(o.ModuleDir), "BENCHMARKS.md")
	}
	if o.ResultsDir == "" {
		o.ResultsDir = filepath.Join(o.ModuleDir, "results")
	}
	if o.Count <= 0 {
		o.Count = 6
		if o.Quick {
			o.Count = 1
		}
	}
	if o.BenchTime == "" {
		o.BenchTime = "500ms"
		if o.Quick {
			o.BenchTime = "20ms"
		}
	}
	if o.ProfileCases == nil {
		o.ProfileCases = []string{"array_200_valid", "object_40_valid"}
	}
	if o.LoadClients <= 0 {
		o.LoadClients = 64
	}
	if o.LoadDuration <= 0 {
		o.LoadDuration = 2 * time.Second
		if o.Quick {
			o.LoadDuration = 200 * time.Millisecond
		}
	}
	if o.LoadRounds <= 0 {
		o.LoadRounds = 3
		if o.Quick {
			o.LoadRounds = 1
		}
	}
	if o.ProxyCalls <= 0 {
		o.ProxyCalls = 2000
		if o.Quick {
			o.ProxyCalls = 100
		}
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return o, nil
}

// smoke reports whether the run is too short to publish.
func (o Options) smoke() bool { return o.Quick || o.Count < 6 }

// findModuleDir looks for the benchmarks module in the working directory,
// its benchmarks/ subdirectory and its parents.
func findModuleDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	if isModuleDir(filepath.Join(wd, "benchmarks")) {
		return filepath.Join(wd, "benchmarks"), nil
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if isModuleDir(dir) {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", errors.New("report: cannot find the " + ModulePath + " module from " + wd + "; run from the repository root or benchmarks/")
		}
	}
}

func isModuleDir(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, "module ") {
			return strings.TrimSpace(strings.TrimPrefix(line, "module ")) == ModulePath
		}
	}
	return false
}

func logf(o Options, format string, args ...any) {
	fmt.Fprintf(o.Log, "report: "+format+"\n", args...)
}
