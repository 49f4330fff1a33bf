package agenttest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
	"github.com/agentpreflight/preflight/agent/tools"
)

// The tools of the idiom scenario, in which each tool fails, when it
// does, with a Go error carrying an HTTP status (StatusError), so that
// every framework's own way of surviving tool errors can be put in front
// of it unchanged.
const (
	Search = "web_search"  // priced, read-only
	Email  = "send_email"  // priced, side-effecting
	Fetch  = "fetch_page"  // free, read-only; the first call of each URL fails with HTTP 503
	File   = "file_ticket" // free, side-effecting; always fails with HTTP 422
)

// The prices of the idiom scenario.
const (
	SearchPrice = "0.01"
	EmailPrice  = "0.04"
)

// ScenarioBudgetUSD is the idiom scenario's budget: more than it spends.
// ApprovalBudgetUSD is the approval session's: one email fits, two do not.
const (
	ScenarioBudgetUSD = "1.00"
	ApprovalBudgetUSD = "0.06"
)

// ScenarioSpentUSD is what the idiom scenario spends when guarded: five
// searches and two emails.
const ScenarioSpentUSD = "0.13"

// StatusError is a tool's failure with an HTTP status: "HTTP 503 Service
// Unavailable". agent.ClassifyError reads its status.
type StatusError int

func (e StatusError) Error() string {
	return fmt.Sprintf("HTTP %d %s", int(e), http.StatusText(int(e)))
}

// StatusCode returns the status.
func (e StatusError) StatusCode() int { return int(e) }

// The idiom scenario's arguments.
type (
	// EmailArgs are send_email's arguments.
	EmailArgs struct {
		To string `json:"to"`
	}
	// FetchArgs are fetch_page's arguments.
	FetchArgs struct {
		URL string `json:"url"`
	}
)

// ScenarioSpecs are the specs of the idiom scenario's tools.
func ScenarioSpecs() []tools.Spec {
	return []tools.Spec{
		{Operation: preflight.Operation{Name: Search, Effects: preflight.EffectsReadOnly}, PriceUSD: SearchPrice},
		{Operation: preflight.Operation{Name: Email, Effects: preflight.EffectsSideEffecting}, PriceUSD: EmailPrice},
		{Operation: preflight.Operation{Name: Fetch, Effects: preflight.EffectsReadOnly}},
		{Operation: preflight.Operation{Name: File, Effects: preflight.EffectsSideEffecting}},
	}
}

// ApprovalSpecs are ScenarioSpecs with send_email needing a person's
// approval for every call (tools.ApprovalAlways): the specs of each
// adapter's approval session, in which a person approves one email and
// declines another.
func ApprovalSpecs() []tools.Spec {
	specs := ScenarioSpecs()
	for i := range specs {
		if specs[i].Operation.Name == Email {
			specs[i].Approval = tools.Approval{When: tools.ApprovalAlways}
		}
	}
	return specs
}

// Scenario is the idiom scenario: its four tools with their execution
// counters, and its script of 11 model turns. Guarded, the tools run
// 5 / 2 / 2 / 1 times (ScenarioWant); unguarded 7 / 2 / 3 / 2; with a
// failure saved as a success 5 / 2 / 1 / 2. Safe for concurrent use.
type Scenario struct {
	mu      sync.Mutex
	by      map[string]int
	fetched map[string]int
	turns   [][]Call
	results map[string][]byte // call ID → result as the model read it
}

// ScenarioWant are the executions by tool the guarded scenario must
// end with.
func ScenarioWant() map[string]int {
	return map[string]int{Search: 5, Email: 2, Fetch: 2, File: 1}
}

// NewScenario returns the scenario, its tools not run and its script not
// started.
func NewScenario() *Scenario {
	q := func(s string) string { return `{"q":"` + s + `"}` }
	return &Scenario{by: map[string]int{}, fetched: map[string]int{}, results: map[string][]byte{}, turns: [][]Call{
		{{"s1", Search, q("alpha")}},                                  // runs
		{{"s2", Search, q("alpha")}},                                  // reused
		{{"s3", Search, q("beta")}, {"s4", Search, q("gamma")}},       // both run
		{{"s5", Search, q("beta")}, {"e1", Email, `{"to":"a@x.io"}`}}, // reused; sent
		{{"e2", Email, `{"to":"b@x.io"}`}},                            // sent
		{{"f1", Fetch, `{"url":"https://x.io/a"}`}},                   // 503
		{{"f2", Fetch, `{"url":"https://x.io/a"}`}},                   // runs again, succeeds
		{{"f3", Fetch, `{"url":"https://x.io/a"}`}},                   // reused
		{{"t1", File, `{"title":"disk full"}`}},                       // 422
		{{"t2", File, `{"title":"disk full"}`}},                       // blocked: retry cap
		{{"s6", Search, q("delta")}, {"s7", Search, q("epsilon")}},    // both run
	}}
}

// Next returns the calls of the script's next turn, or nil when it is
// over (the model should then answer in text).
func (s *Scenario) Next() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.turns) == 0 {
		return nil
	}
	t := s.turns[0]
	s.turns = s.turns[1:]
	return t
}

// Result records the result of call id as the model read it (JSON), for
// Verify to check. A test that cannot see results need not call it.
func (s *Scenario) Result(id string, result []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.results[id] = append([]byte(nil), result...)
}

// Counts returns a copy of the executions by tool.
func (s *Scenario) Counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.by))
	for k, v := range s.by {
		out[k] = v
	}
	return out
}

func (s *Scenario) count(tool, key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.by[tool]++
	s.fetched[tool+" "+key]++
	return s.fetched[tool+" "+key]
}

// SearchRun is web_search.
func (s *Scenario) SearchRun(q string) (map[string]any, error) {
	n := s.count(Search, q)
	return map[string]any{"q": q, "hits": 3, "execution": n}, nil
}

// EmailRun is send_email.
func (s *Scenario) EmailRun(to string) (map[string]any, error) {
	s.count(Email, to)
	return map[string]any{"sent": to}, nil
}

// FetchRun is fetch_page: the first call of each URL fails with
// StatusError(503).
func (s *Scenario) FetchRun(url string) (map[string]any, error) {
	if s.count(Fetch, url) == 1 {
		return nil, StatusError(http.StatusServiceUnavailable)
	}
	return map[string]any{"url": url, "body": "page a"}, nil
}

// FileRun is file_ticket: it always fails with StatusError(422).
func (s *Scenario) FileRun(title string) (map[string]any, error) {
	s.count(File, title)
	return nil, StatusError(http.StatusUnprocessableEntity)
}

// Verify checks that the whole script was played, that the tools ran as
// ScenarioWant says, and that g spent ScenarioSpentUSD; and, when results
// were recorded, that the fetch's repeat read the success, not the 503,
// and that the ticket's withheld retry names the failed call by the
// model's id for it (t1). It returns the
// counts, for a test's log.
func (s *Scenario) Verify(t T, g *agent.Guard) map[string]int {
	t.Helper()
	s.mu.Lock()
	left := len(s.turns)
	s.mu.Unlock()
	if left != 0 {
		t.Fatalf("the run ended with %d of the script's turns left", left)
	}
	got := s.Counts()
	for tool, n := range ScenarioWant() {
		if got[tool] != n {
			t.Fatalf("executions %v, want %v", got, ScenarioWant())
		}
	}
	s.mu.Lock()
	res := s.results
	s.mu.Unlock()
	if len(res) > 0 {
		if string(res["f3"]) != string(res["f2"]) || !strings.Contains(string(res["f2"]), "page a") {
			t.Fatalf("the fetch's repeat read %s, want the success %s byte for byte", res["f3"], res["f2"])
		}
		if !strings.Contains(string(res["t2"]), `"matchedCallId":"t1"`) || !strings.Contains(string(res["t2"]), `(call \"t1\")`) {
			t.Fatalf("the ticket's retry read %s, want it withheld naming call t1", res["t2"])
		}
	}
	spent, err := g.SpentUSD(context.Background())
	if err != nil || spent != ScenarioSpentUSD {
		t.Fatalf("spent %s (%v), want %s", spent, err, ScenarioSpentUSD)
	}
	return got
}
