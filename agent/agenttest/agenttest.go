// Package agenttest is the scripted session an agent-framework adapter of
// preflight is tested with, in the manner of net/http/httptest: three
// tools that count their executions, the guard configuration the script
// expects, and a script of model turns (tool calls, some in parallel)
// with what each call must come back as: run, reused, coalesced with a
// parallel duplicate, or withheld with a given decision and reason code.
//
// The language model is the one part of an agent out of reach of a test:
// an adapter's test drives its real framework with a scripted model that
// asks Recorder.Next for the tool calls of the next turn and hands
// Recorder.Result the tool results it was given; Recorder.Verify then
// checks every result and the tools' own execution counters after every
// turn. The guard under test is configured with Options (BudgetUSD,
// Specs and Classify).
//
// # Store conformance
//
// TestLedgerStore and TestResultStore are the conformance suites of
// agent.LedgerStore and tools.ResultStore, in the manner of
// testing/slogtest: every implementation (the in-memory ones, the Redis
// store of agent/redisledger, a user's own) runs the same suite from its
// own tests, and a broken promise fails that test.
//
// agenttest calls no model, opens no connection and reads no clock but
// the sleep of SlowSymbol; it is for tests, not for production agents.
package agenttest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/tools"
)

// The tools' names.
const (
	Quote  = "market_quote"  // paid, read-only; SLOW makes it take SlowFor
	Ticket = "create_ticket" // side-effecting; always fails with a 404
	Flaky  = "flaky_search"  // read-only; the first call of each query fails with a 503
)

// The money of the script: a budget that affords four quotes.
const (
	BudgetUSD  = "0.45" // the session's budget
	QuotePrice = "0.10" // market_quote's price; the other tools are free
)

// A market_quote of SlowSymbol takes SlowFor, long enough for parallel
// identical calls to pile up behind it.
const (
	SlowSymbol = "SLOW"
	SlowFor    = 300 * time.Millisecond
)

// QuoteSchema is market_quote's input schema.
const QuoteSchema = `{"type":"object","required":["symbol"],"properties":{"symbol":{"type":"string","minLength":1,"maxLength":12}},"additionalProperties":false}`

// Specs are the tool specs the guard under test must be given.
func Specs() []tools.Spec {
	return []tools.Spec{
		{Operation: preflight.Operation{Name: Quote, Effects: preflight.EffectsReadOnly, Schema: json.RawMessage(QuoteSchema)}, PriceUSD: QuotePrice},
		{Operation: preflight.Operation{Name: Ticket, Effects: preflight.EffectsSideEffecting}},
		{Operation: preflight.Operation{Name: Flaky, Effects: preflight.EffectsReadOnly}},
	}
}

// Options are the options the guard under test must be given: the
// script's budget, Specs and Classify.
func Options() adapt.Options {
	return adapt.Options{BudgetUSD: BudgetUSD, Specs: Specs(), Classify: Classify}
}

// Classify reads the tools' in-band failures: a result with a "status"
// member is classified by that HTTP status; an error by
// agent.ClassifyError.
func Classify(_ string, result []byte, err error) preflight.Outcome {
	if err != nil {
		return agent.ClassifyError(err)
	}
	var r struct{ Status int }
	if json.Unmarshal(result, &r) == nil && r.Status != 0 {
		return agent.ClassifyStatus(r.Status)
	}
	return preflight.OutcomeSuccess
}

// Tools are the three tools and their execution counters. Safe for
// concurrent use.
type Tools struct {
	mu   sync.Mutex
	by   map[string]int
	args map[string]int
}

// NewTools returns tools that have not run.
func NewTools() *Tools { return &Tools{by: map[string]int{}, args: map[string]int{}} }

// Counts returns a copy of the executions by tool.
func (t *Tools) Counts() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]int, len(t.by))
	for k, v := range t.by {
		out[k] = v
	}
	return out
}

func (t *Tools) count(tool string, key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.by[tool]++
	t.args[tool+" "+key]++
	return t.args[tool+" "+key]
}

// QuoteRun is market_quote: it returns a price and which execution of the
// symbol this was, so a reused result is told apart from a new one.
func (t *Tools) QuoteRun(symbol string) map[string]any {
	n := t.count(Quote, symbol)
	if symbol == SlowSymbol {
		time.Sleep(SlowFor)
	}
	return map[string]any{"symbol": symbol, "price": "101.25", "execution": n}
}

// TicketRun is create_ticket: it always fails, in band, with a 404.
func (t *Tools) TicketRun(title string) map[string]any {
	t.count(Ticket, title)
	return map[string]any{"status": 404, "error": `404 Not Found: project "OPS" does not exist`}
}

// FlakyRun is flaky_search: the first call of each query fails, in band,
// with a 503; later ones succeed.
func (t *Tools) FlakyRun(q string) map[string]any {
	if t.count(Flaky, q) == 1 {
		return map[string]any{"status": 503, "error": "503 Service Unavailable: index overloaded, try again"}
	}
	return map[string]any{"hits": 3, "q": q}
}

// Call is one tool call of a turn.
type Call struct {
	ID   string // the call's ID, unique in the script; hand it to Recorder.Result
	Tool string // the tool's name
	Args string // the arguments, a JSON object
}

// How a call must come back.
type how int

const (
	ran       how = iota // the tool ran (the counters grow)
	reused               // the saved result of call Same, byte for byte
	coalesced            // the result of the parallel call Same, byte for byte
	withheld             // not run: the decision Verdict with reason Code first
)

type want struct {
	how     how
	same    string // ID of the call whose result this one repeats
	verdict preflight.Verdict
	code    preflight.ReasonCode
	failed  bool // ran and failed in band
}

type step struct {
	call Call
	want want
}

// turn is the calls of one model turn (run in parallel by frameworks that
// do) and the executions by tool once it is over.
type turn struct {
	steps []step
	execs map[string]int
}

func c(id, tool, args string, w want) step { return step{Call{id, tool, args}, w} }

var (
	run = want{how: ran}
	bad = want{how: ran, failed: true}
)

func reuse(id string) want  { return want{how: reused, same: id} }
func joined(id string) want { return want{how: coalesced, same: id} }
func held(v preflight.Verdict, code preflight.ReasonCode) want {
	return want{how: withheld, verdict: v, code: code}
}

// script is the session: 25 tool calls in 15 turns.
func script() []turn {
	aaa := `{"symbol":"AAA"}`
	slow := `{"symbol":"` + SlowSymbol + `"}`
	capped := held(preflight.VerdictBlock, preflight.ReasonRetryCapReached)
	return []turn{
		// A paid read-only call, then the same call: reused.
		{[]step{c("q1", Quote, aaa, run)}, map[string]int{Quote: 1}},
		{[]step{c("q2", Quote, aaa, reuse("q1"))}, map[string]int{Quote: 1}},
		// Four parallel repeats of a finished call: all reused.
		{[]step{c("q3", Quote, aaa, reuse("q1")), c("q4", Quote, aaa, reuse("q1")), c("q5", Quote, aaa, reuse("q1")), c("q6", Quote, aaa, reuse("q1"))}, map[string]int{Quote: 1}},
		// Five identical calls in one turn to a slow tool: one runs, the
		// others get its result (which one runs is the scheduler's choice).
		{[]step{c("s1", Quote, slow, joined("")), c("s2", Quote, slow, joined("")), c("s3", Quote, slow, joined("")), c("s4", Quote, slow, joined("")), c("s5", Quote, slow, joined(""))}, map[string]int{Quote: 2}},
		// A transient failure does not stop a retry; the success is reused.
		{[]step{c("f1", Flaky, `{"q":"x"}`, bad)}, map[string]int{Quote: 2, Flaky: 1}},
		{[]step{c("f2", Flaky, `{"q":"x"}`, run)}, map[string]int{Quote: 2, Flaky: 2}},
		{[]step{c("f3", Flaky, `{"q":"x"}`, reuse("f2"))}, map[string]int{Quote: 2, Flaky: 2}},
		// A terminal failure is not retried; other arguments still run.
		{[]step{c("t1", Ticket, `{"title":"disk full"}`, bad)}, map[string]int{Quote: 2, Flaky: 2, Ticket: 1}},
		{[]step{c("t2", Ticket, `{"title":"disk full"}`, capped)}, map[string]int{Quote: 2, Flaky: 2, Ticket: 1}},
		{[]step{c("t3", Ticket, `{"title":"disk full"}`, capped), c("t4", Ticket, `{"title":"cpu hot"}`, bad)}, map[string]int{Quote: 2, Flaky: 2, Ticket: 2}},
		// Arguments that break the schema never reach the tool.
		{[]step{c("b1", Quote, `{"symbol":""}`, held(preflight.VerdictBlock, preflight.ReasonInvalidPayload))}, map[string]int{Quote: 2, Flaky: 2, Ticket: 2}},
		// Two paid calls in parallel fit the budget left ($0.25) together.
		{[]step{c("q7", Quote, `{"symbol":"CCC"}`, run), c("q8", Quote, `{"symbol":"DDD"}`, run)}, map[string]int{Quote: 4, Flaky: 2, Ticket: 2}},
		// $0.05 left: the next quote is deferred.
		{[]step{c("q9", Quote, `{"symbol":"EEE"}`, held(preflight.VerdictDefer, preflight.ReasonBudgetExceeded))}, map[string]int{Quote: 4, Flaky: 2, Ticket: 2}},
		// Free work goes on: a saved result is still reused, a free tool runs.
		{[]step{c("q10", Quote, aaa, reuse("q1")), c("f4", Flaky, `{"q":"y"}`, bad)}, map[string]int{Quote: 4, Flaky: 3, Ticket: 2}},
		{[]step{c("f5", Flaky, `{"q":"y"}`, run)}, map[string]int{Quote: 4, Flaky: 4, Ticket: 2}},
	}
}

// SpentUSD is what the script spends: four quotes.
const SpentUSD = "0.4"

// Recorder plays the script for a scripted model and keeps what came back.
// Safe for concurrent use.
type Recorder struct {
	tools *Tools

	mu      sync.Mutex
	turns   []turn
	next    int               // turns handed out
	results map[string][]byte // call ID → tool result as the model read it (JSON)
	after   []map[string]int  // counts seen before turn i+1 was handed out
}

// NewRecorder returns a recorder of the script over tools.
func NewRecorder(tools *Tools) *Recorder {
	return &Recorder{tools: tools, turns: script(), results: map[string][]byte{}}
}

// Calls is the number of tool calls in the script.
func (r *Recorder) Calls() int {
	n := 0
	for _, t := range r.turns {
		n += len(t.steps)
	}
	return n
}

// Result records the result of call id as the model reads it, as JSON.
func (r *Recorder) Result(id string, result []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.results[id] = append([]byte(nil), result...)
}

// Next returns the calls of the next turn, or nil when the script is
// over (the model should then answer in text). It snapshots the
// counters: the model is called again only after the last turn's tools
// finished.
func (r *Recorder) Next() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.next > 0 && len(r.after) < r.next {
		r.after = append(r.after, r.tools.Counts())
	}
	if r.next == len(r.turns) {
		return nil
	}
	t := r.turns[r.next]
	r.next++
	out := make([]Call, len(t.steps))
	for i, s := range t.steps {
		out[i] = s.call
	}
	return out
}

// withheldResult is the part of a withheld result (adapt.Withheld) the
// checks read.
type withheldResult struct {
	Error    string `json:"error"`
	Withheld string `json:"withheld"` // agent/adkguard's key for the sentence

	Preflight *struct {
		Tool        string                 `json:"tool"`
		Decision    preflight.Verdict      `json:"decision"`
		ReasonCodes []preflight.ReasonCode `json:"reasonCodes"`
	} `json:"preflight"`
}

// Tally is what the script observed.
type Tally struct {
	Calls     int                          // tool calls the model made
	Executed  int                          // calls the tools ran
	Reused    int                          // calls answered with a saved result
	Coalesced int                          // parallel duplicates answered with one execution's result
	Withheld  map[preflight.ReasonCode]int // calls not run, by first reason code
}

// String is the tally in one line, for a test's log.
func (t Tally) String() string {
	return fmt.Sprintf("%d calls: %d executed, %d reused, %d coalesced, withheld %v", t.Calls, t.Executed, t.Reused, t.Coalesced, t.Withheld)
}

// T is the part of testing.TB Verify uses.
type T interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Verify checks the whole script ran and every call came back as it must,
// and that g, the guard under test, spent SpentUSD. It returns the tally.
func (r *Recorder) Verify(t T, g *agent.Guard) Tally {
	t.Helper()
	spent, err := g.SpentUSD(context.Background())
	if err != nil {
		t.Fatalf("the guard's spending cannot be read: %v", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.next != len(r.turns) || len(r.after) != len(r.turns) {
		t.Fatalf("the run ended after %d of %d turns (the model was asked %d times after a turn)", r.next, len(r.turns), len(r.after))
	}
	tally := Tally{Withheld: map[preflight.ReasonCode]int{}}
	for i, tu := range r.turns {
		for tool, n := range tu.execs {
			if got := r.after[i][tool]; got != n {
				t.Fatalf("after turn %d: %s executed %d times, want %d (counts %v)", i+1, tool, got, n, r.after[i])
			}
		}
		for tool, n := range r.after[i] {
			if n != tu.execs[tool] {
				t.Fatalf("after turn %d: %s executed %d times, want %d", i+1, tool, n, tu.execs[tool])
			}
		}
		var joinedTo []byte
		for _, s := range tu.steps {
			tally.Calls++
			got, ok := r.results[s.call.ID]
			if !ok {
				t.Fatalf("call %s (%s %s): the model never got a result", s.call.ID, s.call.Tool, s.call.Args)
			}
			var w withheldResult
			json.Unmarshal(got, &w)
			isWithheld := w.Preflight != nil
			switch s.want.how {
			case ran:
				tally.Executed++
				if isWithheld {
					t.Fatalf("call %s: withheld, want it run: %s", s.call.ID, got)
				}
				var st struct{ Status int }
				json.Unmarshal(got, &st)
				if (st.Status != 0) != s.want.failed {
					t.Fatalf("call %s: result %s, want failed=%v", s.call.ID, got, s.want.failed)
				}
			case reused:
				tally.Reused++
				if string(got) != string(r.results[s.want.same]) {
					t.Fatalf("call %s: result %s, want %s's result byte for byte: %s", s.call.ID, got, s.want.same, r.results[s.want.same])
				}
			case coalesced:
				if isWithheld {
					t.Fatalf("call %s: withheld, want the shared result: %s", s.call.ID, got)
				}
				if joinedTo == nil {
					joinedTo = got
					tally.Executed++
				} else {
					tally.Coalesced++
					if string(got) != string(joinedTo) {
						t.Fatalf("call %s: result %s, want the parallel duplicate's result byte for byte: %s", s.call.ID, got, joinedTo)
					}
				}
			case withheld:
				if !isWithheld {
					t.Fatalf("call %s: result %s, want it withheld with %s", s.call.ID, got, s.want.code)
				}
				p := w.Preflight
				if p.Tool != s.call.Tool || p.Decision != s.want.verdict || len(p.ReasonCodes) == 0 || p.ReasonCodes[0] != s.want.code {
					t.Fatalf("call %s: withheld as %s, want tool %s, decision %s, reason %s first", s.call.ID, got, s.call.Tool, s.want.verdict, s.want.code)
				}
				if w.Error == "" {
					w.Error = w.Withheld
				}
				if len(w.Error) < 9 || w.Error[:9] != "not run: " {
					t.Fatalf("call %s: message %q does not start with \"not run: \"", s.call.ID, w.Error)
				}
				tally.Withheld[s.want.code]++
			}
		}
	}
	if spent != SpentUSD {
		t.Fatalf("the guard spent $%s, want $%s (budget $%s)", spent, SpentUSD, BudgetUSD)
	}
	if q := r.after[len(r.after)-1][Quote]; q*10 > 45 {
		t.Fatalf("%d quotes at $%s executed: over the $%s budget", q, QuotePrice, BudgetUSD)
	}
	return tally
}

// The tools' arguments, for frameworks that infer a tool's input from a
// Go type.
type (
	// QuoteArgs are market_quote's arguments.
	QuoteArgs struct {
		Symbol string `json:"symbol"`
	}
	// TicketArgs are create_ticket's arguments.
	TicketArgs struct {
		Title string `json:"title"`
	}
	// SearchArgs are flaky_search's arguments.
	SearchArgs struct {
		Q string `json:"q"`
	}
)
