package adapt

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/google/go-cmp/cmp"
)

// quote is a tool result as a framework hands it over: a Go value.
type quote struct {
	Symbol string  `json:"symbol"`
	Price  float64 `json:"price"`
}

// classified is one call of a CallValue classifier.
type classified struct {
	Tool   string
	Fresh  *quote
	Result string
	Err    error
}

// newSession is a session whose one tool, "quote", is read-only and costs
// 0.10 of a 0.25 budget: two calls run, a third is deferred.
func newSession(t *testing.T) *tools.Session {
	t.Helper()
	s, _, err := NewSession(&Options{
		BudgetUSD: "0.25",
		Specs:     []tools.Spec{{Operation: preflight.Operation{Name: "quote", Effects: preflight.EffectsReadOnly}, PriceUSD: "0.10"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// recorder returns a classifier that records its calls in *got and
// classifies as DefaultClassify does.
func recorder(got *[]classified) func(string, *quote, []byte, error) preflight.Outcome {
	return func(tool string, fresh *quote, result []byte, err error) preflight.Outcome {
		*got = append(*got, classified{Tool: tool, Fresh: fresh, Result: string(result), Err: err})
		return DefaultClassify(tool, result, err)
	}
}

// counting returns a tool that returns a copy of q, and how many times it
// ran.
func counting(q quote) (run func(context.Context) (*quote, error), runs *int) {
	runs = new(int)
	return func(context.Context) (*quote, error) {
		*runs++
		v := q
		return &v, nil
	}, runs
}

func TestCallValueRanThenReused(t *testing.T) {
	ctx := context.Background()
	s := newSession(t)
	var calls []classified
	run, runs := counting(quote{Symbol: "A", Price: 1.5})

	// The first call runs: its result is run's own value, and the
	// classifier sees that value and the JSON saved for reuse.
	first, w, err := CallValue(ctx, s, recorder(&calls), "quote", json.RawMessage(`{"symbol":"A"}`), run)
	if err != nil || w != nil {
		t.Fatalf("first call: w %v, err %v", w, err)
	}
	want := []classified{{Tool: "quote", Fresh: first, Result: `{"symbol":"A","price":1.5}`}}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("classifier calls (-want +got):\n%s", diff)
	}

	// The same call again is reused: the saved JSON decoded into a new
	// value, without running the tool or classifying.
	again, w, err := CallValue(ctx, s, recorder(&calls), "quote", json.RawMessage(`{"symbol":"A"}`), run)
	if err != nil || w != nil {
		t.Fatalf("second call: w %v, err %v", w, err)
	}
	if diff := cmp.Diff(first, again); diff != "" {
		t.Errorf("reused result (-want +got):\n%s", diff)
	}
	if again == first {
		t.Error("the reused result is the first call's value, not a copy decoded from the store")
	}
	if *runs != 1 || len(calls) != 1 {
		t.Errorf("tool ran %d times and was classified %d times, want 1 and 1", *runs, len(calls))
	}
}

func TestCallValueRunError(t *testing.T) {
	// A tool's error is returned unchanged, and the classifier sees it
	// with no value and no JSON, even when run returned a value too.
	s := newSession(t)
	var calls []classified
	boom := errors.New("boom")
	res, w, err := CallValue(context.Background(), s, recorder(&calls), "quote", json.RawMessage(`{"symbol":"B"}`),
		func(context.Context) (*quote, error) { return &quote{Symbol: "B"}, boom })
	if err != boom || res != nil || w != nil {
		t.Errorf("got res %v, w %v, err %v; want nil, nil, boom", res, w, err)
	}
	want := []classified{{Tool: "quote", Err: boom}}
	if diff := cmp.Diff(want, calls, cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
		t.Errorf("classifier calls (-want +got):\n%s", diff)
	}
}

func TestCallValueWithheld(t *testing.T) {
	// Over the budget, a call is not run: no value, the withheld result
	// for the model, no error.
	ctx := context.Background()
	s := newSession(t)
	var calls []classified
	run, runs := counting(quote{})
	for _, sym := range []string{"C", "D"} {
		if _, _, err := CallValue(ctx, s, recorder(&calls), "quote", json.RawMessage(`{"symbol":"`+sym+`"}`), run); err != nil {
			t.Fatal(err)
		}
	}
	res, w, err := CallValue(ctx, s, recorder(&calls), "quote", json.RawMessage(`{"symbol":"E"}`), run)
	if err != nil || res != nil || w == nil {
		t.Fatalf("got res %v, w %v, err %v; want a withheld call", res, w, err)
	}
	if w.Preflight.Decision != preflight.VerdictDefer || *runs != 2 {
		t.Errorf("decision %q after %d runs, want %q after 2", w.Preflight.Decision, *runs, preflight.VerdictDefer)
	}
}

func TestCallValueSavedResultDoesNotDecode(t *testing.T) {
	// A saved result that is not a T (here a string saved by a tool of
	// another result type) is an error, not a zero value.
	ctx := context.Background()
	s := newSession(t)
	args := json.RawMessage(`{"symbol":"F"}`)
	text := "not a quote"
	_, _, err := CallValue(ctx, s, func(string, *string, []byte, error) preflight.Outcome { return preflight.OutcomeSuccess },
		"quote", args, func(context.Context) (*string, error) { return &text, nil })
	if err != nil {
		t.Fatal(err)
	}
	res, w, err := CallValue(ctx, s, recorder(new([]classified)), "quote", args,
		func(context.Context) (*quote, error) { t.Error("reused call ran"); return nil, nil })
	var ute *json.UnmarshalTypeError
	if !errors.As(err, &ute) || res != nil || w != nil {
		t.Errorf("got res %v, w %v, err %v; want a *json.UnmarshalTypeError", res, w, err)
	}
}

func TestNewSessionClassifier(t *testing.T) {
	// Nil options work, and a nil Classify is DefaultClassify; a Classify
	// given is returned as is.
	_, c, err := NewSession(nil)
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if got, want := c("t", nil, boom), agent.ClassifyError(boom); got != want {
		t.Errorf("default classifier: got %q, want %q", got, want)
	}
	_, c, err = NewSession(&Options{Classify: func(string, []byte, error) preflight.Outcome { return "mine" }})
	if err != nil {
		t.Fatal(err)
	}
	if got := c("t", nil, nil); got != "mine" {
		t.Errorf("given classifier: got %q, want %q", got, "mine")
	}
}

// TestNotEvaluatedSaysWhatIsWrong: the adapters tell the model what is
// wrong with arguments preflight cannot evaluate, in its own terms, and
// the tool does not run.
func TestNotEvaluatedSaysWhatIsWrong(t *testing.T) {
	tests := []struct{ name, args, want string }{
		{"an array", `[1]`, `not run: the arguments of "quote" are not a JSON object (found an array); send the arguments as one JSON object instead`},
		{"a duplicate member", `{"s":1,"s":2}`, `not run: the arguments of "quote" could not be checked (/s: duplicate member name "s"); fix the arguments and call it again instead`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ran := false
			_, w, err := Call(context.Background(), newSession(t), nil, "quote", json.RawMessage(tt.args), func(context.Context) ([]byte, error) {
				ran = true
				return []byte(`{}`), nil
			})
			if err != nil || w == nil || ran {
				t.Fatalf("Call = %v, %v, ran %v; want a withheld result and no run", w, err, ran)
			}
			if d := cmp.Diff(tt.want, w.Error); d != "" {
				t.Errorf("message (-want +got):\n%s", d)
			}
		})
	}
}

// TestInBand: the frameworks' own ways of handing a tool's error to the
// model as its result are failures by default, transient or terminal by
// the status they name; plain results are successes.
func TestInBand(t *testing.T) {
	for _, c := range []struct {
		name, result string
		want         preflight.Outcome
	}{
		{"a plain object", `{"hits":3}`, preflight.OutcomeSuccess},
		{"a null error member", `{"error":null,"hits":3}`, preflight.OutcomeSuccess},
		{"an empty error member", `{"error":"","hits":3}`, preflight.OutcomeSuccess},
		{"a plain text", `three hits for "x"`, preflight.OutcomeSuccess},
		{"a text mentioning a number", `page 404 of the archive`, preflight.OutcomeSuccess},
		{"an array", `[1,2]`, preflight.OutcomeSuccess},
		{"Genkit or ADK error object without status", `{"error":"connection reset"}`, preflight.OutcomeTransientFailure},
		{"error object with a status member", `{"error":"nope","status":422}`, preflight.OutcomeTerminalFailure},
		{"error object naming its status", `{"error":"HTTP 503 Service Unavailable"}`, preflight.OutcomeTransientFailure},
		{"error object with a terminal status text", `{"error":"422 Unprocessable Entity: no project"}`, preflight.OutcomeTerminalFailure},
		{"error object, nested", `{"error":{"code":404,"message":"gone"}}`, preflight.OutcomeTerminalFailure},
		{"ADK retryandreflect", `{"response_type":"ERROR_HANDLED_BY_REFLECT_AND_RETRY_PLUGIN","error_details":"HTTP 422 Unprocessable Entity","retry_count":1}`, preflight.OutcomeTerminalFailure},
		{"eino error handler text", `HTTP 503 Service Unavailable`, preflight.OutcomeTransientFailure},
		{"eino error handler text, terminal", `create ticket: status 422`, preflight.OutcomeTerminalFailure},
		{"eino error handler text, JSON string", `"failed to connect"`, preflight.OutcomeTransientFailure},
		{"a text beginning with error", `error: disk full`, preflight.OutcomeTransientFailure},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := DefaultClassify("t", []byte(c.result), nil); got != c.want {
				t.Errorf("DefaultClassify(%s) = %s, want %s", c.result, got, c.want)
			}
		})
	}
}

// TestPause: a call interrupted before it did its work (Pause) is neither
// a failure nor a charge: its money is given back, and the same call run
// again is decided and charged once, on a budget that fits it only once.
func TestPause(t *testing.T) {
	ctx := context.Background()
	s, classify, err := NewSession(&Options{BudgetUSD: "0.06", Specs: []tools.Spec{{PriceUSD: "0.04",
		Operation: preflight.Operation{Name: "email", Effects: preflight.EffectsSideEffecting}}}})
	if err != nil {
		t.Fatal(err)
	}
	ask := errors.New("approval required")
	args := json.RawMessage(`{"to":"a@example.com"}`)
	_, w, err := Call(ctx, s, classify, "email", args, func(context.Context) ([]byte, error) { return nil, Pause(ask) })
	if err != ask || w != nil {
		t.Fatalf("interrupted call: withheld %v, error %v; want the interrupt itself", w, err)
	}
	if spent, _ := s.Guard().SpentUSD(ctx); spent != "0" {
		t.Fatalf("spent %s after the interrupt, want 0", spent)
	}
	sent := 0
	ans, w, err := Call(ctx, s, classify, "email", args, func(context.Context) ([]byte, error) { sent++; return []byte(`{"sent":true}`), nil })
	if err != nil || w != nil || ans.How != tools.HowRan || sent != 1 {
		t.Fatalf("approved call: %v %v %v, sent %d", ans.How, w, err, sent)
	}
	if spent, _ := s.Guard().SpentUSD(ctx); spent != "0.04" {
		t.Fatalf("spent %s, want 0.04", spent)
	}
}

// TestCallIDs: a withheld retry names the call it repeats by the
// framework's call id that call ran under, not by preflight's step id.
func TestCallIDs(t *testing.T) {
	ctx := context.Background()
	s, classify, err := NewSession(&Options{Specs: []tools.Spec{{Operation: preflight.Operation{Name: "post", Effects: preflight.EffectsSideEffecting}}}})
	if err != nil {
		t.Fatal(err)
	}
	var ids CallIDs
	args := json.RawMessage(`{"title":"x"}`)
	fail := func(context.Context) ([]byte, error) { return []byte(`{"error":"HTTP 422"}`), nil }
	if _, w, err := Call(WithCallID(ctx, &ids, "toolu_01"), s, classify, "post", args, fail); w != nil || err != nil {
		t.Fatalf("first call: %v %v", w, err)
	}
	_, w, err := Call(WithCallID(ctx, &ids, "toolu_02"), s, classify, "post", args, fail)
	if err != nil || w == nil {
		t.Fatalf("retry: %v %v, want it withheld", w, err)
	}
	if w.Preflight.MatchedCallID != "toolu_01" || !strings.Contains(w.Error, `(call "toolu_01")`) {
		t.Fatalf("withheld %s; want the call named toolu_01", w.JSON())
	}
}

// TestDerived: with no specs, a tool the framework describes (its name
// and input schema) is known: arguments that break the schema do not
// run, and a terminal failure is not retried; the specs given are kept,
// and one without a schema is given the framework's.
func TestDerived(t *testing.T) {
	ctx := context.Background()
	o := &Options{Specs: []tools.Spec{{PriceUSD: "0.10", Operation: preflight.Operation{Name: "quote", Effects: preflight.EffectsReadOnly}}}}
	s, classify, err := NewSession(o)
	if err != nil {
		t.Fatal(err)
	}
	var d Derived
	schema := json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"}},"required":["title"]}`)
	quoteSchema := json.RawMessage(`{"type":"object","properties":{"symbol":{"type":"string"}}}`)
	if err := d.Add(s, o, preflight.Operation{Name: "post", Schema: schema}, preflight.Operation{Name: "quote", Schema: quoteSchema}); err != nil {
		t.Fatal(err)
	}
	quoted := 0
	quote := func(context.Context) ([]byte, error) { quoted++; return []byte(`{"price":1}`), nil }
	if _, w, _ := Call(ctx, s, classify, "quote", json.RawMessage(`{"symbol":7}`), quote); w == nil || quoted != 0 {
		t.Fatalf("arguments breaking the schema given to a spec without one: withheld %v, runs %d", w, quoted)
	}
	runs := 0
	fail := func(context.Context) ([]byte, error) { runs++; return []byte(`{"error":"HTTP 422"}`), nil }
	if _, w, _ := Call(ctx, s, classify, "post", json.RawMessage(`{"title":7}`), fail); w == nil || runs != 0 {
		t.Fatalf("arguments breaking the derived schema: withheld %v, runs %d", w, runs)
	}
	for range 2 {
		Call(ctx, s, classify, "post", json.RawMessage(`{"title":"x"}`), fail)
	}
	if runs != 1 {
		t.Fatalf("a terminal failure ran %d times, want 1", runs)
	}
	if sp, ok := s.Tools().Spec("quote"); !ok || sp.PriceUSD != "0.10" || sp.Operation.Effects != preflight.EffectsReadOnly || string(sp.Operation.Schema) != string(quoteSchema) {
		t.Fatalf("the given spec was not kept: %+v", sp)
	}
}

// TestCallCancelled: a call whose context ends while it runs is a
// transient failure, whether the tool returns the context's error or a
// result anyway: it is counted at its estimate (it was started), never
// saved for reuse, and the same call later runs again.
func TestCallCancelled(t *testing.T) {
	for _, c := range []struct {
		name string
		run  func(ctx context.Context) ([]byte, error)
	}{
		{"the tool returns the context's error", func(ctx context.Context) ([]byte, error) { <-ctx.Done(); return nil, ctx.Err() }},
		{"the tool returns a result anyway", func(ctx context.Context) ([]byte, error) { <-ctx.Done(); return []byte(`{"price":"cut short"}`), nil }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSession(t)
			ctx, cancel := context.WithCancel(context.Background())
			runs := 0
			ans, w, err := Call(ctx, s, nil, "quote", json.RawMessage(`{"symbol":"A"}`), func(ctx context.Context) ([]byte, error) {
				runs++
				cancel()
				return c.run(ctx)
			})
			if w != nil || ans.How != tools.HowRan || ans.Outcome != preflight.OutcomeTransientFailure && err == nil {
				t.Fatalf("cancelled call: %v %v %v, %v", ans.How, ans.Outcome, w, err)
			}
			h, _ := s.Guard().Ledger().History(context.Background())
			if len(h) != 1 || h[0].Outcome != preflight.OutcomeTransientFailure {
				t.Fatalf("history %+v, want one transient failure", h)
			}
			if sp, _ := s.Guard().SpentUSD(context.Background()); sp != "0.1" {
				t.Fatalf("spent %s, want the estimate 0.1", sp)
			}
			ans, _, err = Call(context.Background(), s, nil, "quote", json.RawMessage(`{"symbol":"A"}`), func(context.Context) ([]byte, error) {
				runs++
				return []byte(`{"price":"1.5"}`), nil
			})
			if err != nil || runs != 2 || ans.How != tools.HowRan || string(ans.Result) != `{"price":"1.5"}` {
				t.Fatalf("the call again: runs %d, %v %s, %v; want it run again", runs, ans.How, ans.Result, err)
			}
		})
	}
}

// TestUnapprovedNotRun: a call whose tool needs a person's approval is not
// run by Call nor let run by Start (the adapters do not ask); a call of
// another tool runs.
func TestUnapprovedNotRun(t *testing.T) {
	s, classify, err := NewSession(&Options{Specs: []tools.Spec{
		{Operation: preflight.Operation{Name: "rm"}, Approval: tools.Approval{When: tools.ApprovalAlways}},
		{Operation: preflight.Operation{Name: "ls"}}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	runs := 0
	run := func(context.Context) ([]byte, error) { runs++; return []byte(`{}`), nil }
	ans, w, err := Call(ctx, s, classify, "rm", json.RawMessage(`{}`), run)
	if err != nil || w == nil || runs != 0 || ans.How != tools.HowWithheld || w.Preflight.Approval != "unavailable" ||
		!strings.Contains(w.Error, "needs a person's approval") {
		t.Fatalf("Call rm: %+v %+v %v, %d runs; want withheld, not run", ans, w, err, runs)
	}
	if p, _, w, err := Start(ctx, s, "rm", json.RawMessage(`{}`)); p != nil || w == nil || err != nil {
		t.Fatalf("Start rm: %v %+v %v; want withheld", p, w, err)
	}
	if _, w, err := Call(ctx, s, classify, "ls", json.RawMessage(`{}`), run); w != nil || err != nil || runs != 1 {
		t.Fatalf("Call ls: %+v %v, %d runs; want run", w, err, runs)
	}
	if b, _ := s.Guard().SpentUSD(ctx); b != "0" {
		t.Errorf("spent %s", b)
	}
}
