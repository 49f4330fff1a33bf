package main

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/server/internal/allocs"
)

// serverAllocBudgets bound the allocations that preflightd's handler chain
// makes per request besides the library's own work (decoding, evaluating
// and marshalling the answer, measured on the same body): request id,
// observation, body buffer, headers, context; the access log adds none.
var serverAllocBudgets = map[string]float64{
	"decision/server": 3, // the library's figure includes json.Marshal's answer, which the route now encodes into a reused buffer
	"decision/full":   3,
	"check/server":    4,
	"check/full":      4,
}

func TestServerAllocationBudgets(t *testing.T) {
	if allocs.RaceEnabled() {
		t.Skip("the race detector's instrumentation allocates; run without -race")
	}
	bodies := []struct {
		name, path, body string
		library          func([]byte) (any, error)
	}{
		{"decision", "/v0.2/preflight/tool-call", benchDecisionBody, func(b []byte) (any, error) { return preflight.DecideJSON(b) }},
		{"check", "/check-request", benchEmailBody, func(b []byte) (any, error) { return preflight.CheckJSON(b) }},
	}
	chains := map[string]http.Handler{}
	for _, hc := range benchHandlers() {
		chains[hc.name] = hc.h
	}
	for _, bd := range bodies {
		body := []byte(bd.body)
		library := allocs.PerRun(50, func() {
			v, err := bd.library(body)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := json.Marshal(v); err != nil {
				t.Fatal(err)
			}
		})
		for _, chain := range []string{"server", "full"} {
			name := bd.name + "/" + chain
			w, r, rb := &benchWriter{h: http.Header{}}, newBenchRequest(bd.path), &benchBody{}
			all := allocs.PerRun(50, func() { servePOST(t, chains[chain], w, r, rb, body) })
			if got, budget := all-library, serverAllocBudgets[name]; got > budget {
				t.Errorf("%s: the handler chain allocates %v times per request besides the library's %v; budget %v", name, got, library, budget)
			} else {
				t.Logf("%s: %v allocations besides the library's %v (budget %v)", name, got, library, budget)
			}
		}
	}
}
