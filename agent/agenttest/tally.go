package agenttest

import (
	"context"
	"encoding/json"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
)

// Answers is how the idiom scenario's calls were answered: executions by
// the tools' own counters, withheld calls by the decision the model read,
// and the money the guard spent. Reused counts the calls answered with
// a saved (or coalesced) result: every call whose result was recorded
// that neither ran nor was withheld.
type Answers struct {
	Executions int
	Reused     int
	Blocked    int
	Deferred   int
	SpentUSD   json.Number
}

// ScenarioAnswers are the answers of the guarded idiom scenario: 10 executions
// (5 / 2 / 2 / 1), 3 reuses (a search twice, the fetch once), 1 block (the
// ticket's retry), no deferral, $0.13.
func ScenarioAnswers() Answers {
	return Answers{Executions: 10, Reused: 3, Blocked: 1, SpentUSD: ScenarioSpentUSD}
}

// Answered returns how the scenario's calls were answered, with g's
// spending. It needs every
// call's result recorded (Result) under a distinct id.
func (s *Scenario) Answered(g *agent.Guard) (Answers, error) {
	var t Answers
	for _, n := range s.Counts() {
		t.Executions += n
	}
	s.mu.Lock()
	calls := len(s.results)
	for _, b := range s.results {
		var w struct {
			Preflight *struct{ Decision preflight.Verdict } `json:"preflight"`
		}
		if json.Unmarshal(b, &w) != nil || w.Preflight == nil {
			continue
		}
		switch w.Preflight.Decision {
		case preflight.VerdictBlock:
			t.Blocked++
		case preflight.VerdictDefer:
			t.Deferred++
		}
		calls--
	}
	s.mu.Unlock()
	t.Reused = calls - t.Executions
	spent, err := g.SpentUSD(context.Background())
	t.SpentUSD = spent
	return t, err
}
