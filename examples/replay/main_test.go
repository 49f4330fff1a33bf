package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files with the current output")

// checkGolden compares got with the file at path, or rewrites the file
// under -update.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got; go test -update rewrites it):\n%s", path, diff)
	}
}

func TestReplayGolden(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		golden string
	}{
		{"defaults, every line", []string{"-v"}, "run.golden"},
		{"a budget that runs out", []string{"-budget", "0.06", "-v"}, "run-budget.golden"},
		{"advice skipped, no reuse", []string{"-advise", "skip", "-unsupported", "skip", "-reuse=false"}, "run-strict.golden"},
		{"the run's own tool in a catalog", []string{"-operations", filepath.Join("testdata", "operations.json"), "-unsupported", "skip", "-v"}, "run-catalog.golden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			args := append([]string{"-f", filepath.Join("testdata", "run.jsonl")}, tt.args...)
			if err := run(context.Background(), args, nil, &out); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("testdata", tt.golden), out.Bytes())
		})
	}
}

func TestReplayBadLines(t *testing.T) {
	good := `{"t":0,"stepId":"s1","provider":"search","operation":"web_search","request":{"query":"q"},"costUsd":0.005,"outcome":"success"}`
	tests := []struct {
		name  string
		input string
		want  string
	}{
		{"not JSON", good + "\n\nnot json\n", "stdin:3: not a valid record: invalid character 'o' in literal null (expecting 'u')"},
		{"two values", good + " {}\n", "stdin:1: more than one JSON value on the line"},
		{"unknown member", strings.Replace(good, `"t":0`, `"t":0,"cost":1`, 1), `stdin:1: not a valid record: unknown field "cost"`},
		{"missing members", `{"t":0,"request":{}}`, `stdin:1: missing or empty "costUsd", "operation", "outcome", "provider", "stepId"`},
		{"request not an object", strings.Replace(good, `{"query":"q"}`, `"q"`, 1), `stdin:1: "request" must be a JSON object`},
		{"unknown outcome", strings.Replace(good, `"success"`, `"ok"`, 1), `stdin:1: "outcome" is "ok"; want success, terminal_failure or transient_failure`},
		{"negative cost", strings.Replace(good, `0.005`, `-1`, 1), `stdin:1: "costUsd" is -1; want a non-negative number`},
		{"cost as a string", strings.Replace(good, `0.005`, `"0.005"`, 1), `stdin:1: "costUsd" is "0.005"; want a JSON number`},
		{"time goes back", good + "\n" + strings.Replace(good, `"t":0`, `"t":-0.5`, 1), `stdin:2: "t" is -0.5; want a non-negative number`},
		{"out of order", strings.Replace(good, `"t":0`, `"t":5`, 1) + "\n" + strings.Replace(good, `"t":0`, `"t":4.5`, 1), `stdin:2: "t" is 4.5, earlier than the line before (5); lines must be in run order`},
		{"rejected by preflight", strings.Replace(good, `"operation":"web_search"`, `"operation":"web_search","runId":" "`, 1) + "\n" + strings.Replace(good, `"costUsd":0.005`, `"costUsd":2000000000`, 1), "stdin:2: invalid_request:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(context.Background(), []string{"-f", "-"}, strings.NewReader(tt.input), &out)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("run() error = %v\nwant one starting with %s", err, tt.want)
			}
		})
	}
}

func TestReplayBadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no file", nil, "-f is required"},
		{"bad advise", []string{"-f", "-", "-advise", "maybe"}, `-advise is "maybe"; want run or skip`},
		{"bad budget", []string{"-f", "-", "-budget", "lots"}, `-budget: agent: BudgetUSD "lots" must be a non-negative decimal`},
		{"bad retry cap", []string{"-f", "-", "-retry-cap", "0"}, "-retry-cap is 0; want 1 or more"},
		{"bad ttl", []string{"-f", "-", "-ttl", "soon"}, `-ttl: "soon" is not a JSON number`},
		{"missing file", []string{"-f", "testdata/nope.jsonl"}, "open testdata/nope.jsonl"},
		{"bad unsupported", []string{"-f", "-", "-unsupported", "maybe"}, `-unsupported is "maybe"; want similar, run or skip`},
		{"missing catalog", []string{"-f", "-", "-operations", "testdata/nope.json"}, "-operations: open testdata/nope.json"},
		{"bad catalog", []string{"-f", "-", "-operations", "testdata/run.jsonl"}, "-operations testdata/run.jsonl: invalid_json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(context.Background(), tt.args, strings.NewReader(""), &out)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("run() error = %v, want one starting with %q", err, tt.want)
			}
		})
	}
}

func TestDecimalText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"0", "0"}, {"0.1", "0.1"}, {"1e-3", "0.001"}, {"12.50", "12.5"}, {"2E+2", "200"},
	}
	for _, tt := range tests {
		r, err := parseDecimal(json.Number(tt.in))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, decimalText(r)); diff != "" {
			t.Errorf("decimalText(%s) (-want +got):\n%s", tt.in, diff)
		}
	}
	a, _ := parseDecimal("0.1")
	b, _ := parseDecimal("0.2")
	if got := decimalText(add(a, b)); got != "0.3" {
		t.Errorf("0.1 + 0.2 = %s, want 0.3", got)
	}
}

func TestParseDecimalRefuses(t *testing.T) {
	tests := []struct{ in, want string }{
		{"01", `"01" is not a JSON number`},
		{"1.", `"1." is not a JSON number`},
		{"0x10", `"0x10" is not a JSON number`},
		{"1/2", `"1/2" is not a JSON number`},
		{"1e30", `"1e30": out of range`},
		{"-1e30", `"-1e30": out of range`},
		{"1e-999999999", `"1e-999999999": out of range`},
		{"1e99999999999999999999", `"1e99999999999999999999": out of range`},
		{"0." + strings.Repeat("0", 1000) + "1", `"0.` + strings.Repeat("0", 1000) + `1": out of range`},
	}
	for _, tt := range tests {
		_, err := parseDecimal(json.Number(tt.in))
		if err == nil || err.Error() != tt.want {
			t.Errorf("parseDecimal(%.20s) error = %v, want %s", tt.in, err, tt.want)
		}
	}
}
