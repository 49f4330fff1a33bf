package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentpreflight/preflight/agent/mcpguard"
)

// benchTools is the tool list of the per-call benchmarks: a read-only
// quote, as mcptest's market_quote.
const benchTools = `{"tools":[{"name":"quote","inputSchema":{"type":"object","properties":{"symbol":{"type":"string","minLength":1}},"required":["symbol"]},"annotations":{"readOnlyHint":true}}]}`

// benchResult is what the quote answers.
var benchResult = json.RawMessage(`{"content":[{"type":"text","text":"{\"symbol\":\"S\",\"price\":101.5}"}],"structuredContent":{"symbol":"S","price":101.5}}`)

// benchSession returns a session that has seen the tool list and holds
// others entries of other calls in its history (at most 100 are kept).
func benchSession(tb testing.TB, others int) *mcpguard.Session {
	tb.Helper()
	s, err := mcpguard.NewSession(&mcpguard.Options{BudgetUSD: "1000000"})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	s.SawToolsList("", json.RawMessage(benchTools))
	for i := range others {
		benchCall(tb, s, quoteParams(fmt.Sprint("OTHER", i)))
	}
	return s
}

func quoteParams(symbol string) json.RawMessage {
	return json.RawMessage(`{"name":"quote","arguments":{"symbol":"` + symbol + `"}}`)
}

func forwardQuote(context.Context) (json.RawMessage, error) { return benchResult, nil }

// benchCall makes one guarded call; it fails tb unless the answer is the
// tool's result (run or reused).
func benchCall(tb testing.TB, s *mcpguard.Session, params json.RawMessage) {
	res, err := s.CallTool(context.Background(), params, forwardQuote)
	if err != nil || string(res) != string(benchResult) {
		tb.Fatalf("%s: %s %v", params, res, err)
	}
}

// BenchmarkSessionCallTool is the guard's per-call work in a proxy,
// without the transport: decide, forward (to a function that answers at
// once), record; for a call that runs (a new symbol each time) and a
// reuse (the same symbol), with no other call in the session's history
// (h0) and with 100 (h100).
func BenchmarkSessionCallTool(b *testing.B) {
	for _, others := range []int{0, 100} {
		b.Run(fmt.Sprintf("run/h%d", others), func(b *testing.B) {
			s := benchSession(b, others)
			i := 0
			for b.Loop() {
				if others == 0 {
					// A fresh session each time: nothing in its history.
					b.StopTimer()
					s = benchSession(b, 0)
					b.StartTimer()
				}
				i++
				benchCall(b, s, quoteParams(fmt.Sprint("S", i)))
			}
		})
		b.Run(fmt.Sprintf("reuse/h%d", others), func(b *testing.B) {
			s := benchSession(b, others)
			same := quoteParams("SAME")
			benchCall(b, s, same) // runs; the rest reuse it
			for b.Loop() {
				benchCall(b, s, same)
			}
		})
	}
}
