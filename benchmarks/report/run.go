package report

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// Run runs every benchmark o.Count times (interleaved: the whole suite
// once per pass, so that a change in machine load touches every
// implementation alike), summarizes them with benchstat, optionally writes
// profiles, runs the server load comparison and writes the Markdown report,
// the raw output and the charts. It stops at the first failure, leaving the
// previous report in place.
func Run(ctx context.Context, o Options) error {
	o, err := o.withDefaults()
	if err != nil {
		return err
	}
	if o.Cases != "" {
		if _, err := regexp.Compile(o.Cases); err != nil {
			return fmt.Errorf("report: cases: %w", err)
		}
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return err
	}
	m := probeMachine(goBin, filepath.Dir(o.ModuleDir))
	logf(o, "machine: %s, %d CPUs, %s, load %s", m.CPU, m.Cores, m.GoVersion, m.LoadStart)

	tmp, err := os.MkdirTemp("", "preflight-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "bench.test")
	logf(o, "building the benchmark binary")
	if _, err := command(ctx, o.ModuleDir, goBin, "test", "-c", "-o", bin, "."); err != nil {
		return err
	}

	pattern := "^Benchmark(Check|Decide|ToolSchemas)$"
	if o.Cases != "" {
		pattern += "/^(case=(" + o.Cases + ")|args=.*)$" // the tool schemas' rows are not cases
	}
	var raw bytes.Buffer
	for pass := 1; pass <= o.Count; pass++ {
		logf(o, "benchmarks pass %d/%d (benchtime %s)", pass, o.Count, o.BenchTime)
		out, err := command(ctx, o.ModuleDir, bin, "-test.run", "^$", "-test.bench", pattern,
			"-test.benchmem", "-test.count", "1", "-test.benchtime", o.BenchTime)
		if err != nil {
			return err
		}
		raw.Write(out)
	}
	if err := os.MkdirAll(o.ResultsDir, 0o755); err != nil {
		return err
	}
	rawPath := filepath.Join(o.ResultsDir, "raw.txt")
	if err := os.WriteFile(rawPath, raw.Bytes(), 0o644); err != nil {
		return err
	}

	r := &results{opts: o, machine: m}
	if cpu := benchCPU(raw.Bytes()); cpu != "" && cpu != m.CPU {
		r.machine.CPU = cpu + " (/proc/cpuinfo: " + m.CPU + ")"
	}
	for _, fam := range []struct {
		name string
		dst  **table
		row  string
	}{{"Check", &r.check, "/case"}, {"Decide", &r.decide, "/case"}, {"ToolSchemas", &r.tools, "/args"}} {
		if !bytes.Contains(raw.Bytes(), []byte("Benchmark"+fam.name+"/")) {
			continue
		}
		if *fam.dst, err = summarizeBy(goBin, o.ModuleDir, rawPath, fam.name, fam.row); err != nil {
			return err
		}
		text, err := benchstat(goBin, o.ModuleDir, rawPath, "-filter", ".name:"+fam.name, "-col", "/impl", "-row", fam.row)
		if err != nil {
			return err
		}
		r.benchstatText = append(r.benchstatText, string(text))
	}
	if err := os.WriteFile(filepath.Join(o.ResultsDir, "benchstat.txt"), []byte(strings.Join(r.benchstatText, "\n")), 0o644); err != nil {
		return err
	}

	if o.ProfileDir != "" {
		if r.profiles, err = runProfiles(ctx, o, goBin, bin); err != nil {
			return err
		}
	}
	if !o.SkipLoad {
		if r.load, err = runLoad(ctx, o); err != nil {
			return err
		}
	}
	if !o.SkipProxy {
		if r.proxy, err = runProxy(ctx, o, goBin); err != nil {
			return err
		}
	}
	r.machine.end()

	if r.check != nil {
		r.checkChart = filepath.Join(o.ResultsDir, "check.svg")
		if err := os.WriteFile(r.checkChart, checkChart(r.check), 0o644); err != nil {
			return err
		}
	}
	if r.decide != nil {
		r.decideChart = filepath.Join(o.ResultsDir, "decide.svg")
		if err := os.WriteFile(r.decideChart, decideChart(r.decide), 0o644); err != nil {
			return err
		}
	}
	md, err := r.markdown()
	if err != nil {
		return err
	}
	if err := os.WriteFile(o.Out, md, 0o644); err != nil {
		return err
	}
	logf(o, "wrote %s, %s", o.Out, o.ResultsDir)
	return nil
}

// command runs name with args in dir and returns its standard output; on
// failure the error carries the end of both outputs.
func command(ctx context.Context, dir, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %v\n%s%s", filepath.Base(name), strings.Join(args, " "), err,
			tail(stdout.Bytes(), 3000), tail(stderr.Bytes(), 3000))
	}
	return stdout.Bytes(), nil
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// benchCPU returns the "cpu:" line that go test printed, or "".
func benchCPU(raw []byte) string {
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "cpu: "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
