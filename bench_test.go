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

// BenchmarkToolSchema compares the two validators a tool schema can get on
// the corpus's twelve-keyword schemas: the subset's (the fast path, which
// compileFor picks for them) and the full one (what any other tool schema
// gets). cold is compile plus one validation, as a catalog built per call
// would pay; warm is the validation of a compiled schema, as Decide pays.
func BenchmarkToolSchema(b *testing.B) {
	for name, data := range benchFiles(b, "check_*_valid.json") {
		var req struct {
			Schema  json.RawMessage `json:"schema"`
			Request struct {
				Body json.RawMessage `json:"body"`
			} `json:"request"`
		}
		if err := json.Unmarshal(data, &req); err != nil {
			b.Fatal(err)
		}
		sv, err := strictjson.Parse(req.Schema, strictjson.Limits{})
		if err != nil {
			b.Fatal(err)
		}
		body, err := strictjson.Parse(req.Request.Body, strictjson.Limits{})
		if err != nil {
			b.Fatal(err)
		}
		compilers := []struct {
			name    string
			compile func() (payloadSchema, *Error)
		}{
			{"subset", func() (payloadSchema, *Error) { return compileFor(useTool, sv, "") }},
			{"full", func() (payloadSchema, *Error) { return compileFullSchema(sv, "") }},
		}
		for _, c := range compilers {
			if s, _ := c.compile(); s == nil {
				b.Fatalf("%s: %s does not compile", name, c.name)
			}
			b.Run(strings.TrimPrefix(name, "check_")+"/cold/"+c.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					s, _ := c.compile()
					errs := issueList{max: maxCheckErrors}
					if s.validate(body, "", &errs) != nil || len(errs.issues) > 0 {
						b.Fatal("not valid")
					}
				}
			})
			b.Run(strings.TrimPrefix(name, "check_")+"/warm/"+c.name, func(b *testing.B) {
				s, _ := c.compile()
				b.ReportAllocs()
				for b.Loop() {
					errs := issueList{max: maxCheckErrors}
					if s.validate(body, "", &errs) != nil || len(errs.issues) > 0 {
						b.Fatal("not valid")
					}
				}
			})
		}
	}
}
