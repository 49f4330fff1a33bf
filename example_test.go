package preflight_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentpreflight/preflight"
)

// An agent about to create an issue checks the body against the API's
// schema first. The body misses a required field, so sending it would be
// wasted: the target API bills invalid requests.
func ExampleCheck() {
	res, err := preflight.CheckJSON([]byte(`{
		"request": {
			"method": "POST",
			"url": "https://api.example.com/v1/issues",
			"body": {"title": "", "labels": ["bug"]}
		},
		"schema": {
			"type": "object",
			"required": ["title", "repo"],
			"properties": {"title": {"type": "string", "minLength": 1}}
		},
		"economics": {"downstreamCostUsd": 0.02, "billsOnInvalidRequest": true, "retryCostUsd": 0.01}
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("valid:", res.Valid)
	for _, e := range res.Errors {
		fmt.Printf("%s %s: %s\n", e.Path, e.Code, e.Message)
	}
	fmt.Println(res.Economics.Advice, "- waste avoided:", res.Economics.WasteIfSentUSD)
	// Output:
	// valid: false
	// /request/body/repo required: missing required property "repo"
	// /request/body/title minLength: expected at least 1 character, found 0
	// abort - waste avoided: 0.03
}

// Requests can also be built in Go; numbers are decimal text, so money is
// exact.
func ExampleDecide() {
	fee := json.Number("0.002")
	dec, err := preflight.Decide(&preflight.ToolCallRequest{
		RunID:  "run-1",
		StepID: "step-4",
		Tool: preflight.ToolCall{
			Provider:                 "search",
			Operation:                "web_search",
			Request:                  json.RawMessage(`{"query":"exact decimal arithmetic in Go","max_results":5}`),
			EstimatedExternalCostUSD: "0.1",
			EstimatedModelCostUSD:    "0.2",
		},
		Budget:            preflight.Budget{RemainingUSD: "0.3"},
		PreflightPriceUSD: fee,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(dec.Verdict, dec.Enforcement, dec.ReasonCodes)
	// Output:
	// allow execute [NO_PROVEN_WASTE]
}

// A reuse decision points at the caller's own saved result. The caller
// records the fingerprint of every call it makes, with its outcome.
func ExampleDecide_reuse() {
	proposal := func(history []preflight.HistoryEntry) *preflight.ToolCallRequest {
		return &preflight.ToolCallRequest{
			RunID: "run-1", StepID: "step-9",
			Tool: preflight.ToolCall{Provider: "browse", Operation: "fetch",
				Request: json.RawMessage(`{"url":"https://go.dev/ref/spec"}`), EstimatedExternalCostUSD: "0.004"},
			Budget:              preflight.Budget{RemainingUSD: "1"},
			Task:                &preflight.Task{GoalHash: "goal-spec-summary"},
			Capabilities:        &preflight.Capabilities{CanReusePriorResult: true},
			FreshnessTTLSeconds: "3600",
			History:             history,
		}
	}
	first, _ := preflight.Decide(proposal(nil))
	// ... the agent fetches the page, saves it, and records the outcome:
	history := []preflight.HistoryEntry{{ToolCallID: "call-17", Fingerprint: first.RequestFingerprint,
		Outcome: preflight.OutcomeSuccess, ResultReference: "cache/spec.html", AgeSeconds: "900", GoalHash: "goal-spec-summary"}}

	again, _ := preflight.Decide(proposal(history))
	fmt.Println(again.Verdict, again.MatchedCallID, again.Recommendation.ResultReference)
	fmt.Println("modeled net savings:", again.Estimated.NetSavingsUSD)
	// Output:
	// reuse call-17 cache/spec.html
	// modeled net savings: 0.002
}

// Input that cannot be evaluated is an *Error with a code and a JSON
// Pointer for every problem.
func ExampleError() {
	_, err := preflight.DecodeToolCallRequest([]byte(`{"runId":"r","stepId":"s","budget":{"remainingUsd":-1}}`))
	var e *preflight.Error
	if errors.As(err, &e) {
		fmt.Println(e.Code)
		for _, d := range e.Details {
			fmt.Println(d.Path, d.Code)
		}
	}
	// Output:
	// invalid_request
	// /tool required
	// /budget/remainingUsd minimum
}

// A server that checks untrusted schemas from many callers may want a
// smaller cache of compiled schemas, or none; answers are the same either
// way.
func ExampleSetSchemaCacheLimits() {
	prev := preflight.SetSchemaCacheLimits(preflight.SchemaCacheLimits{Entries: 256, Bytes: 8 << 20})
	defer preflight.SetSchemaCacheLimits(prev)
	doc := []byte(`{"request":{"method":"POST","url":"https://api.example.com/v1/x","body":{"n":0}},` +
		`"schema":{"type":"object","properties":{"n":{"type":"integer","minimum":1}}}}`)
	for range 2 { // the second call finds the schema compiled
		res, err := preflight.CheckJSON(doc)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(res.Valid, res.Errors[0].Code)
	}
	preflight.SetSchemaCacheLimits(preflight.SchemaCacheLimits{}) // off
	res, _ := preflight.CheckJSON(doc)
	fmt.Println(res.Valid, res.Errors[0].Code)
	// Output:
	// false minimum
	// false minimum
	// false minimum
}
