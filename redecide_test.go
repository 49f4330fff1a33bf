package preflight

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/agentpreflight/preflight/internal/redecide"
	"github.com/google/go-cmp/cmp"
)

// The path package agent decides through (redecide.Decide) must answer as
// Decide does, byte for byte, whatever its memo kept: nothing, the same
// call decided with another history and budget, or another call.

// decideKeepingAlike fails t unless every way of deciding the request
// data encodes through decideKeeping answers as Decide does.
func decideKeepingAlike(t *testing.T, data []byte) {
	t.Helper()
	req, err := DecodeToolCallRequest(data)
	if err != nil {
		return
	}
	want := answer(Decide(req))
	wantJSON, _ := json.Marshal(want.Res)
	check := func(how string, m redecide.Memo) redecide.Memo {
		t.Helper()
		dec, m, err := decideKeeping(nil, *req, m)
		if diff := cmp.Diff(want, answer(dec, err)); diff != "" {
			t.Fatalf("%s: decideKeeping differs from Decide (-Decide +decideKeeping):\n%s", how, diff)
		}
		if got, _ := json.Marshal(dec); string(got) != string(wantJSON) {
			t.Fatalf("%s: decideKeeping wrote %s, Decide %s", how, got, wantJSON)
		}
		return m
	}
	m := check("no memo", redecide.Memo{})
	m = check("its own memo", m) // the payload and fingerprint reused
	m.Release()

	// The same call, first decided without history and with another budget
	// (as agent.Guard decides it before it reads the history).
	first := *req
	first.History = nil
	first.Budget = Budget{RemainingUSD: "1000000"}
	_, m, _ = decideKeeping(nil, first, redecide.Memo{})
	m = check("memo of the call without history", m)
	m.Release()

	// Another operation with the same payload: the tree is reused, the
	// fingerprint is not.
	other := *req
	other.Tool.Operation += "_other"
	_, m, _ = decideKeeping(nil, other, redecide.Memo{})
	m = check("memo of another operation", m)
	m.Release()

	// Another payload: nothing is reused.
	other = *req
	other.Tool.Request = json.RawMessage(`{"another":"payload"}`)
	_, m, _ = decideKeeping(nil, other, redecide.Memo{})
	m = check("memo of another payload", m)
	m.Release()
}

// FuzzDecideKeepingAlike: decideKeeping answers as Decide, with every
// memo.
func FuzzDecideKeepingAlike(f *testing.F) {
	readAlikeSeeds(f)
	f.Fuzz(decideKeepingAlike)
}

// TestDecideKeepingOwnsItsBytes: a memo is compared with its own copy of
// the payload, so that a caller who rewrites its request's bytes in place
// between two decisions gets the decision of the new bytes.
func TestDecideKeepingOwnsItsBytes(t *testing.T) {
	buf := []byte(`{"query":"aaa"}`)
	req := ToolCallRequest{RunID: "r", StepID: "s",
		Tool:   ToolCall{Provider: "serpapi", Operation: "search", Request: buf, EstimatedExternalCostUSD: "0.01"},
		Budget: Budget{RemainingUSD: "1"}}
	_, m, err := decideKeeping(nil, req, redecide.Memo{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	copy(buf, `{"query":"bbb"}`)
	want, err := Decide(&req)
	if err != nil {
		t.Fatal(err)
	}
	got, m, err := decideKeeping(nil, req, m)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("after the bytes changed (-Decide +decideKeeping):\n%s", diff)
	}
	if string(m.Request) != `{"query":"bbb"}` {
		t.Fatalf("the memo holds %s, want the new bytes", m.Request)
	}
}

// BenchmarkDecideTwice is what agent.Guard.Begin asks of the library for
// a call with history: a first decision without it (to learn the
// fingerprint), then one with it; each Decide on its own, and through
// decideKeeping, which reads the payload and fingerprints it once.
func BenchmarkDecideTwice(b *testing.B) {
	data, err := os.ReadFile("testdata/bench/decide_history_100.json")
	if err != nil {
		b.Fatal(err)
	}
	req, err := DecodeToolCallRequest(data)
	if err != nil {
		b.Fatal(err)
	}
	first := *req
	first.History = nil
	b.Run("Decide", func(b *testing.B) {
		for b.Loop() {
			if _, err := Decide(&first); err != nil {
				b.Fatal(err)
			}
			if _, err := Decide(req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decideKeeping", func(b *testing.B) {
		for b.Loop() {
			_, m, err := decideKeeping(nil, first, redecide.Memo{})
			if err != nil {
				b.Fatal(err)
			}
			if _, m, err = decideKeeping(nil, *req, m); err != nil {
				b.Fatal(err)
			}
			m.Release()
		}
	})
}
