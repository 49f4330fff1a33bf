package preflight

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/strictjson"
)

// The benchmark corpus in testdata/bench is shared with the peer comparison
// in benchmarks/.

func benchFiles(b testing.TB, pattern string) map[string][]byte {
	files, err := filepath.Glob(filepath.Join("testdata", "bench", pattern))
	if err != nil || len(files) == 0 {
		b.Fatalf("no corpus files match %s", pattern)
	}
	out := make(map[string][]byte, len(files))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".json")] = data
	}
	return out
}

// BenchmarkCheck measures bytes in to result out: decode, compile, validate,
// requestHash and economics.
func BenchmarkCheck(b *testing.B) {
	for name, data := range benchFiles(b, "check_*.json") {
		b.Run(strings.TrimPrefix(name, "check_"), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := checkBytes(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecide measures bytes in to decision out.
func BenchmarkDecide(b *testing.B) {
	for name, data := range benchFiles(b, "decide_*.json") {
		b.Run(strings.TrimPrefix(name, "decide_"), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decideBytes(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFingerprint measures the v2 fingerprint of a parsed payload alone.
func BenchmarkFingerprint(b *testing.B) {
	req, err := DecodeToolCallRequest(benchFiles(b, "decide_history_000.json")["decide_history_000"])
	if err != nil {
		b.Fatal(err)
	}
	payload, err := strictjson.Parse(req.Tool.Request, strictjson.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := fingerprint(req.Tool.Provider, req.Tool.Operation, payload); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckGo measures Check of a request built in Go (here by
// encoding/json, so that it carries nothing from a decoder): the path
// agent.Guard and every in-process caller takes. Compare with
// BenchmarkCheck, the same requests as bytes.
func BenchmarkCheckGo(b *testing.B) {
	for name, data := range benchFiles(b, "check_*.json") {
		var req CheckRequest
		if err := json.Unmarshal(data, &req); err != nil {
			b.Fatal(err)
		}
		b.Run(strings.TrimPrefix(name, "check_"), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Check(&req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecideGo is BenchmarkCheckGo for Decide.
func BenchmarkDecideGo(b *testing.B) {
	for name, data := range benchFiles(b, "decide_*.json") {
		var req ToolCallRequest
		if err := json.Unmarshal(data, &req); err != nil {
			b.Fatal(err)
		}
		b.Run(strings.TrimPrefix(name, "decide_"), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Decide(&req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
