package report

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// metrics are the benchstat summaries (medians) of one implementation on
// one case. A zero field with its Has flag false was not measured.
type metrics struct {
	NsPerOp, BytesPerOp, AllocsPerOp float64
	HasNs, HasBytes, HasAllocs       bool
	// CPUNsPerOp is the process's CPU time per call (cpu-ns/op), and
	// NsPerByte the wall time per byte of the request (ns/B), where the
	// benchmark reports them.
	CPUNsPerOp, NsPerByte float64
	HasCPU, HasNsPerByte  bool
	// CI is benchstat's confidence interval of sec/op as it printed it,
	// such as "3%" or "∞".
	CI string
}

// table holds the summaries of one benchmark family: case -> impl ->
// metrics, with the cases in benchstat's order.
type table struct {
	Cases []string
	By    map[string]map[string]*metrics
}

func (t *table) get(c, impl string) *metrics {
	if m := t.By[c][impl]; m != nil {
		return m
	}
	return &metrics{}
}

// benchstat runs the benchmarks module's benchstat tool on raw with extra
// arguments and returns its standard output.
func benchstat(goBin, moduleDir, rawPath string, args ...string) ([]byte, error) {
	argv := append([]string{"tool", "benchstat"}, args...)
	argv = append(argv, rawPath)
	cmd := exec.Command(goBin, argv...)
	cmd.Dir = moduleDir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("benchstat %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}

// summarizeBy runs benchstat on one family (Check, Decide, ToolSchemas),
// columns by implementation and rows by the sub-benchmark key row (/case,
// /args), and parses its CSV.
func summarizeBy(goBin, moduleDir, rawPath, family, row string) (*table, error) {
	out, err := benchstat(goBin, moduleDir, rawPath,
		"-format", "csv", "-filter", ".name:"+family, "-col", "/impl", "-row", row)
	if err != nil {
		return nil, err
	}
	return parseBenchstatCSV(out)
}

// parseBenchstatCSV reads benchstat's CSV: for each unit a table whose first
// header line names the column groups (implementations), whose second names
// the unit of each value column, followed by one line per case and a
// geomean line, which is skipped (the report computes its own).
func parseBenchstatCSV(data []byte) (*table, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	recs, err := r.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("benchstat csv: %w", err)
	}
	t := &table{By: map[string]map[string]*metrics{}}
	seen := map[string]bool{}
	var groups []string // implementation of each column of the current table
	var units []string  // unit of each column of the current table
	for i := 0; i < len(recs); i++ {
		rec := recs[i]
		if len(rec) < 2 {
			continue // configuration lines such as "goos: linux"
		}
		if rec[0] == "" {
			if i+1 >= len(recs) || recs[i+1][0] != "" {
				return nil, fmt.Errorf("benchstat csv: header line %d without a unit line", i+1)
			}
			groups = make([]string, len(rec))
			cur := ""
			for j, g := range rec {
				if g != "" {
					cur = g
				}
				groups[j] = cur
			}
			units = recs[i+1]
			i++
			continue
		}
		if groups == nil {
			continue
		}
		name := rec[0]
		if name == "geomean" {
			continue
		}
		if !seen[name] {
			seen[name] = true
			t.Cases = append(t.Cases, name)
			t.By[name] = map[string]*metrics{}
		}
		for j := 1; j < len(rec) && j < len(units); j++ {
			u := units[j]
			if u == "CI" || u == "vs base" || u == "P" || rec[j] == "" {
				continue
			}
			v, err := strconv.ParseFloat(rec[j], 64)
			if err != nil {
				return nil, fmt.Errorf("benchstat csv: %s %s %s: %q is not a number", name, groups[j], u, rec[j])
			}
			m := t.By[name][groups[j]]
			if m == nil {
				m = &metrics{}
				t.By[name][groups[j]] = m
			}
			switch u {
			case "sec/op":
				m.NsPerOp, m.HasNs = v*1e9, true
				if j+1 < len(rec) && units[j+1] == "CI" {
					m.CI = rec[j+1]
				}
			case "B/op":
				m.BytesPerOp, m.HasBytes = v, true
			case "allocs/op":
				m.AllocsPerOp, m.HasAllocs = v, true
			case "cpu-sec/op":
				m.CPUNsPerOp, m.HasCPU = v*1e9, true
			case "sec/B":
				m.NsPerByte, m.HasNsPerByte = v*1e9, true
			}
		}
	}
	if len(t.Cases) == 0 {
		return nil, fmt.Errorf("benchstat csv: no results")
	}
	return t, nil
}
