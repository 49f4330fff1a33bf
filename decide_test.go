package preflight

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// baseCall is an affordable, valid search call with no history.
func baseCall() *ToolCallRequest {
	return &ToolCallRequest{
		RunID:  "run-1",
		StepID: "step-1",
		Tool: ToolCall{
			Provider:                 "search",
			Operation:                "web_search",
			Request:                  json.RawMessage(`{"query":"golang generics","max_results":5}`),
			EstimatedExternalCostUSD: "0.01",
		},
		Budget: Budget{RemainingUSD: "1"},
	}
}

// fingerprintOf returns the fingerprint Decide gives req.
func fingerprintOf(t *testing.T, req *ToolCallRequest) string {
	t.Helper()
	d, err := Decide(req)
	if err != nil {
		t.Fatalf("Decide: %v", err)
	}
	return d.RequestFingerprint
}

// reusable turns req into one whose history holds a fresh reusable success.
func reusable(t *testing.T, req *ToolCallRequest) *ToolCallRequest {
	fp := fingerprintOf(t, req)
	req.Capabilities = &Capabilities{CanReusePriorResult: true}
	req.FreshnessTTLSeconds = "3600"
	req.Task = &Task{GoalHash: "goal-a"}
	req.History = append(req.History, HistoryEntry{ToolCallID: "call-ok", Fingerprint: fp, Outcome: OutcomeSuccess,
		ResultReference: "results/ok.json", AgeSeconds: "60", GoalHash: "goal-a"})
	return req
}

func terminal(fp, id, age string) HistoryEntry {
	return HistoryEntry{ToolCallID: id, Fingerprint: fp, Outcome: OutcomeTerminalFailure, AgeSeconds: json.Number(age)}
}

// want describes the parts of a decision a case checks (all but the
// fingerprint, which is checked separately).
type want struct {
	decision       Verdict
	enforcement    Enforcement
	codes          []ReasonCode
	matched        string
	recommendation *Recommendation
	confidence     string
	avoidable      string // avoidableExternalCostUsd; "" means 0
	net            string // netSavingsUsd; "" means -0.002
	issues         []Issue
}

func (w want) decisionFor(fp string) *ToolCallDecision {
	d := &ToolCallDecision{
		Verdict: w.decision, Enforcement: w.enforcement, ReasonCodes: w.codes,
		RequestFingerprint: fp, MatchedCallID: w.matched, Recommendation: w.recommendation,
		Issues: w.issues,
		Estimated: Estimate{PreflightCostUSD: "0.002", PriceChargedUSD: "0", AvoidableExternalCostUSD: "0",
			AvoidableModelCostUSD: "0", NetSavingsUSD: "-0.002", Confidence: json.Number(w.confidence)},
	}
	if d.Issues == nil {
		d.Issues = []Issue{}
	}
	if w.avoidable != "" {
		d.Estimated.AvoidableExternalCostUSD = json.Number(w.avoidable)
	}
	if w.net != "" {
		d.Estimated.NetSavingsUSD = json.Number(w.net)
	}
	return d
}

var (
	allow = want{decision: VerdictAllow, enforcement: EnforcementExecute, codes: []ReasonCode{ReasonNoProvenWaste}, confidence: "0.5"}
	reuse = want{decision: VerdictReuse, enforcement: EnforcementSafeToSkip, codes: []ReasonCode{ReasonReuseFreshResult}, confidence: "0.9",
		matched:        "call-ok",
		recommendation: &Recommendation{Action: ActionReuseResult, ResultReference: "results/ok.json"},
		avoidable:      "0.01", net: "0.008"}
)

func allowWith(codes ...ReasonCode) want {
	w := allow
	w.codes = append([]ReasonCode{ReasonNoProvenWaste}, codes...)
	return w
}

func TestDecideRules(t *testing.T) {
	tests := []struct {
		name  string
		why   string
		build func(t *testing.T) *ToolCallRequest
		want  want
	}{
		{
			name:  "plain allow",
			why:   "rule 8: nothing found waste",
			build: func(t *testing.T) *ToolCallRequest { return baseCall() },
			want:  allow,
		},
		{
			name: "alias search:web_search",
			why:  "both spellings of the search operation are supported",
			build: func(t *testing.T) *ToolCallRequest {
				r := baseCall()
				r.Tool.Operation = "search:web_search"
				return r
			},
			want: allow,
		},
		{
			name: "alias fetch",
			why:  "browse fetch is supported",
			build: func(t *testing.T) *ToolCallRequest {
				r := baseCall()
				r.Tool.Provider, r.Tool.Operation = "browse", "fetch"
				r.Tool.Request = json.RawMessage(`{"url":"https://go.dev/doc/"}`)
				return r
			},
			want: allow,
		},
		{
			name: "alias browse:fetch",
			why:  "both spellings of the fetch operation are supported",
			build: func(t *testing.T) *ToolCallRequest {
				r := baseCall()
				r.Tool.Provider, r.Tool.Operation = "browse", "browse:fetch"
				r.Tool.Request = json.RawMessage(`{"url":"http://example.com/a?b=c"}`)
				return r
			},
			want: allow,
		},
		{
			name: "unsupported provider",
			why:  "rule 1",
			build: func(t *testing.T) *ToolCallRequest {
				r := baseCall()
				r.Tool.Provider, r.Tool.Operation = "email", "send"
				return r
			},
			want: want{decision: VerdictAdvise, enforcement: EnforcementAdvisory, codes: []ReasonCode{ReasonUnsupportedOperation}, confidence: "1",
				issues: []Issue{{Path: "/tool/provider", Code: IssueUnknownOperation, Message: `the catalog has no operation "send" for provider "email"; it has "search/web_search", "browse/fetch"`}}},
		},
		{
			name: "operation of another provider",
			why:  "search with fetch is not a supported pair",
			build: func(t *testing.T) *ToolCallRequest {
				r := baseCall()
				r.Tool.Operation = "browse:fetch"
				return r
			},
			want: want{decision: VerdictAdvise, enforcement: EnforcementAdvisory, codes: []ReasonCode{ReasonUnsupportedOperation}, confidence: "1",
				issues: []Issue{{Path: "/tool/operation", Code: IssueUnknownOperation, Message: `the catalog has no operation "browse:fetch" for provider "search"; it has "search/web_search", "browse/fetch"; "browse:fetch" is an operation of provider "browse"`}}},
		},
		{
			name: "unsupported beats invalid",
			why:  "an unsupported operation's payload is not judged",
			build: func(t *testing.T) *ToolCallRequest {
				r := baseCall()
				r.Tool.Provider = "Search"
				r.Tool.Request = json.RawMessage(`{}`)
				return r
			},
			want: want{decision: VerdictAdvise, enforcement: EnforcementAdvisory, codes: []ReasonCode{ReasonUnsupportedOperation}, confidence: "1",
				issues: []Issue{
					{Path: "/tool/provider", Code: IssueUnknownOperation, Message: `the catalog has no operation "web_search" for provider "Search"; it has "search/web_search", "browse/fetch"; "web_search" is an operation of provider "search"`},
					{Path: "/tool/provider", Code: IssueSimilarOperation, Message: `did you mean "search/web_search"? (one edit away; the call is not decided as that operation)`},
				}},
		},
		{
			name: "missing query",
			why:  "rule 2, required",
			build: func(t *testing.T) *ToolCallRequest {
				r := baseCall()
				r.Tool.Request = json.RawMessage(`{"max_results":3}`)
				return r
			},
			want: blockInvalid(Issue{Path: "/tool/request/query", Code: IssueRequired, Message: `missing required property "query"`}),
		},
		{
			name: "fractional max_results",
			why:  "rule 2: 2.5 is not an integer",
			build: func(t *testing.T) *ToolCallRequest {
				r := baseCall()
				r.Tool.Request = json.RawMessage(`{"query":"q","max_results":2.5}`)
				return r
			},
			want: blockInvalid(Issue{Path: "/tool/request/max_results", Code: IssueType, Message: "expected integer, found number 2.5"}),
		},
		{
			name: "max_results 5.0 is an integer",
			why:  "DESIGN: 5.0 is an integer",
			build: func(t *testing.T) *ToolCallRequest {
				r := baseCall()
				r.Tool.Request = json.RawMessage(`{"query":"q","max_results":5.0}`)
				return r
			},
			want: allow,
		},
		{
			name: "max_results above 10",
			why:  "rule 2, maximum",
			build: func(t *testing.T) *ToolCallRequest {
				r := baseCall()
				r.Tool.Request = json.RawMessage(`{"query":"q","max_results":11}`)
				return r
			},
			want: blockInvalid(Issue{Path: "/tool/request/max_results", Code: IssueMaximum, Message: "expected at most 10, found 11"}),
		},
		{
			name: "payload number beyond the double range",
			why:  "rule 2 judges everything inside tool.request; the fingerprint keeps 1e400 as written",
			build: func(t *testing.T) *ToolCallRequest {
				r := baseCall()
				r.Tool.Request = json.RawMessage(`{"query":"q","max_results":1e400}`)
				return r
			},
			want: blockInvalid(Issue{Path: "/tool/request/max_results", Code: IssueMaximum, Message: "expected at most 10, found 1e400"}),
		},
		{
			name: "relative browse url",
			why:  "rule 2, absolute-URL rule",
			build: func(t *testing.T) *ToolCallRequest {
				r := baseCall()
				r.Tool.Provider, r.Tool.Operation = "browse", "fetch"
				r.Tool.Request = json.RawMessage(`{"url":"/docs"}`)
				return r
			},
			want: blockInvalid(Issue{Path: "/tool/request/url", Code: IssueAbsoluteURL, Message: `expected an absolute URL with scheme http or https, found "/docs"`}),
		},
		{
			name: "invalid beats reuse",
			why:  "precedence 2 over 3: a reusable success of an invalid payload is not reused",
			build: func(t *testing.T) *ToolCallRequest {
				r := baseCall()
				r.Tool.Request = json.RawMessage(`{"query":"q","extra":true}`)
				return reusable(t, r)
			},
			want: blockInvalid(Issue{Path: "/tool/request/extra", Code: IssueAdditionalProperties, Message: `property "extra" is not allowed`}),
		},
		{
			name:  "reuse",
			why:   "rule 3: every condition holds",
			build: func(t *testing.T) *ToolCallRequest { return reusable(t, baseCall()) },
			want:  reuse,
		},
		{
			name: "reuse at the TTL boundary",
			why:  "an age equal to the TTL still qualifies",
			build: func(t *testing.T) *ToolCallRequest {
				r := reusable(t, baseCall())
				r.History[0].AgeSeconds = "3600.0"
				return r
			},
			want: reuse,
		},
		{
			name: "stale just past the TTL",
			why:  "age 3600.001 > TTL 3600",
			build: func(t *testing.T) *ToolCallRequest {
				r := reusable(t, baseCall())
				r.History[0].AgeSeconds = "3600.001"
				return r
			},
			want: allowWith(ReasonReuseStale),
		},
		{
			name: "reuse not permitted",
			why:  "canReusePriorResult false",
			build: func(t *testing.T) *ToolCallRequest {
				r := reusable(t, baseCall())
				r.Capabilities.CanReusePriorResult = false
				return r
			},
			want: allowWith(ReasonReuseNotPermitted),
		},
		{
			name: "no capabilities",
			why:  "capabilities absent means no permission",
			build: func(t *testing.T) *ToolCallRequest {
				r := reusable(t, baseCall())
				r.Capabilities = nil
				return r
			},
			want: allowWith(ReasonReuseNotPermitted),
		},
		{
			name: "TTL missing",
			why:  "freshnessTtlSeconds omitted disables reuse",
			build: func(t *testing.T) *ToolCallRequest {
				r := reusable(t, baseCall())
				r.FreshnessTTLSeconds = ""
				return r
			},
			want: allowWith(ReasonReuseTTLMissing),
		},
		{
			name: "TTL zero",
			why:  "freshnessTtlSeconds 0 disables reuse",
			build: func(t *testing.T) *ToolCallRequest {
				r := reusable(t, baseCall())
				r.FreshnessTTLSeconds = "0"
				return r
			},
			want: allowWith(ReasonReuseTTLMissing),
		},
		{
			name: "goal mismatch",
			why:  "goal hashes differ",
			build: func(t *testing.T) *ToolCallRequest {
				r := reusable(t, baseCall())
				r.Task.GoalHash = "goal-b"
				return r
			},
			want: allowWith(ReasonReuseGoalMismatch),
		},
		{
			name: "empty goal on both",
			why:  "equal but empty goal hashes do not qualify",
			build: func(t *testing.T) *ToolCallRequest {
				r := reusable(t, baseCall())
				r.Task.GoalHash = ""
				r.History[0].GoalHash = ""
				return r
			},
			want: allowWith(ReasonReuseGoalMismatch),
		},
		{
			name: "no task",
			why:  "a proposal without task.goalHash cannot reuse",
			build: func(t *testing.T) *ToolCallRequest {
				r := reusable(t, baseCall())
				r.Task = nil
				return r
			},
			want: allowWith(ReasonReuseGoalMismatch),
		},
		{
			name: "no result reference",
			why:  "rule 3 needs a non-empty resultReference",
			build: func(t *testing.T) *ToolCallRequest {
				r := reusable(t, baseCall())
				r.History[0].ResultReference = ""
				return r
			},
			want: allowWith(ReasonReuseNoReference),
		},
		{
			name: "other fingerprint",
			why:  "fingerprints are exact: a different query case never matches",
			build: func(t *testing.T) *ToolCallRequest {
				r := reusable(t, baseCall())
				r.Tool.Request = json.RawMessage(`{"query":"Golang generics","max_results":5}`)
				return r
			},
			want: allow,
		},
		{
			name: "youngest qualifying entry",
			why:  "rule 3 picks the youngest; on equal ages the later entry",
			build: func(t *testing.T) *ToolCallRequest {
				r := reusable(t, baseCall())
				e := r.History[0]
				older, tie := e, e
				older.ToolCallID, older.AgeSeconds, older.ResultReference = "call-old", "600", "results/old.json"
				tie.ToolCallID, tie.ResultReference = "call-tie", "results/tie.json"
				r.History = []HistoryEntry{older, e, tie}
				return r
			},
			want: func() want {
				w := reuse
				w.matched = "call-tie"
				w.recommendation = &Recommendation{Action: ActionReuseResult, ResultReference: "results/tie.json"}
				return w
			}(),
		},
		{
			name: "reuse beats retry cap",
			why:  "precedence 3 over 4",
			build: func(t *testing.T) *ToolCallRequest {
				r := reusable(t, baseCall())
				fp := r.History[0].Fingerprint
				r.History = append(r.History, terminal(fp, "call-bad", "10"))
				return r
			},
			want: reuse,
		},
		{
			name: "retry cap reached",
			why:  "rule 4 with the default cap of 1; matchedCallId is the youngest terminal failure",
			build: func(t *testing.T) *ToolCallRequest {
				r := baseCall()
				fp := fingerprintOf(t, r)
				r.History = []HistoryEntry{terminal(fp, "call-1", "100"), terminal(fp, "call-2", "5")}
				return r
			},
			want: want{decision: VerdictBlock, enforcement: EnforcementSafeToSkip, codes: []ReasonCode{ReasonRetryCapReached}, confidence: "0.9", matched: "call-2"},
		},
		{
			name: "below the retry cap",
			why:  "one terminal failure under retryCap 2 is explained, not blocked",
			build: func(t *testing.T) *ToolCallRequest {
				r := baseCall()
				fp := fingerprintOf(t, r)
				r.RetryCap = "2"
				r.History = []HistoryEntry{terminal(fp, "call-1", "100")}
				return r
			},
			want: allowWith(ReasonPriorTerminalFailure),
		},
		{
			name: "retry cap beats defer",
			why:  "precedence 4 over 5 and 6",
			build: func(t *testing.T) *ToolCallRequest {
				r := baseCall()
				fp := fingerprintOf(t, r)
				r.History = []HistoryEntry{terminal(fp, "call-1", "100")}
				r.Budget.RemainingUSD = "0"
				r.Budget.MaxToolCallsRemaining = "0"
				return r
			},
			want: want{decision: VerdictBlock, enforcement: EnforcementSafeToSkip, codes: []ReasonCode{ReasonRetryCapReached}, confidence: "0.9", matched: "call-1"},
		},
		{
			name: "call limit reached",
			why:  "rule 5",
			build: func(t *testing.T) *ToolCallRequest {
				r := baseCall()
				r.Budget.MaxToolCallsRemaining = "0"
				return r
			},
			want: want{decision: VerdictDefer, enforcement: EnforcementSafeToSkip, codes: []ReasonCode{ReasonCallLimitReached}, confidence: "1"},
		},
		{
			name: "budget exceeded",
			why:  "rule 6: 0.1 + 0.2 > 0.29",
			build: func(t *testing.T) *ToolCallRequest {
				r := baseCall()
				r.Tool.EstimatedExternalCostUSD, r.Tool.EstimatedModelCostUSD = "0.1", "0.2"
				r.Budget.RemainingUSD = "0.29"
				return r
			},
			want: want{decision: VerdictDefer, enforcement: EnforcementSafeToSkip, codes: []ReasonCode{ReasonBudgetExceeded}, confidence: "1"},
		},
		{
			name: "exact decimal affordability",
			why:  "0.1 + 0.2 is affordable at 0.3 (no binary-float error)",
			build: func(t *testing.T) *ToolCallRequest {
				r := baseCall()
				r.Tool.EstimatedExternalCostUSD, r.Tool.EstimatedModelCostUSD = "0.1", "0.2"
				r.Budget.RemainingUSD = "0.3"
				return r
			},
			want: allow,
		},
		{
			name: "reserved budget counts",
			why:  "affordability uses remainingUsd − reservedUsd",
			build: func(t *testing.T) *ToolCallRequest {
				r := baseCall()
				r.Budget.RemainingUSD, r.Budget.ReservedUSD = "1", "0.995"
				return r
			},
			want: want{decision: VerdictDefer, enforcement: EnforcementSafeToSkip, codes: []ReasonCode{ReasonBudgetExceeded}, confidence: "1"},
		},
		{
			name: "over-reserved budget defers a free call",
			why:  "a negative free budget defers every call",
			build: func(t *testing.T) *ToolCallRequest {
				r := baseCall()
				r.Tool.EstimatedExternalCostUSD = "0"
				r.Budget.RemainingUSD, r.Budget.ReservedUSD = "1", "2"
				return r
			},
			want: want{decision: VerdictDefer, enforcement: EnforcementSafeToSkip, codes: []ReasonCode{ReasonBudgetExceeded}, confidence: "1"},
		},
		{
			name: "defer beats reduce scope",
			why:  "precedence 6 over 7",
			build: func(t *testing.T) *ToolCallRequest {
				r := baseCall()
				r.Capabilities = &Capabilities{CanReduceScope: true}
				r.Budget.RemainingUSD = "0.005"
				return r
			},
			want: want{decision: VerdictDefer, enforcement: EnforcementSafeToSkip, codes: []ReasonCode{ReasonBudgetExceeded}, confidence: "1"},
		},
		{
			name: "reduce scope",
			why:  "rule 7: 0.01 is more than half of 0.015",
			build: func(t *testing.T) *ToolCallRequest {
				r := baseCall()
				r.Capabilities = &Capabilities{CanReduceScope: true}
				r.Budget.RemainingUSD = "0.015"
				return r
			},
			want: want{decision: VerdictAdvise, enforcement: EnforcementAdvisory, codes: []ReasonCode{ReasonReduceScope}, confidence: "0.6",
				recommendation: &Recommendation{Action: ActionReduceScope}},
		},
		{
			name: "exactly half is not reduce scope",
			why:  "rule 7 needs more than half",
			build: func(t *testing.T) *ToolCallRequest {
				r := baseCall()
				r.Capabilities = &Capabilities{CanReduceScope: true}
				r.Budget.RemainingUSD = "0.02"
				return r
			},
			want: allow,
		},
		{
			name: "reduce scope needs the capability",
			why:  "scope advice requires canReduceScope",
			build: func(t *testing.T) *ToolCallRequest {
				r := baseCall()
				r.Budget.RemainingUSD = "0.015"
				return r
			},
			want: allow,
		},
		{
			name: "prior transient failure",
			why:  "explained after the deciding code",
			build: func(t *testing.T) *ToolCallRequest {
				r := baseCall()
				fp := fingerprintOf(t, r)
				r.History = []HistoryEntry{{ToolCallID: "c", Fingerprint: fp, Outcome: OutcomeTransientFailure, AgeSeconds: "3"}}
				return r
			},
			want: allowWith(ReasonPriorTransientFailure),
		},
		{
			name: "explanations follow a defer",
			why:  "a deferred call still says why it was not reused",
			build: func(t *testing.T) *ToolCallRequest {
				r := reusable(t, baseCall())
				r.History[0].AgeSeconds = "7200"
				r.Budget.RemainingUSD = "0"
				return r
			},
			want: want{decision: VerdictDefer, enforcement: EnforcementSafeToSkip, codes: []ReasonCode{ReasonBudgetExceeded, ReasonReuseStale}, confidence: "1"},
		},
	}
	// Every case is decided by Decide, by the default catalog and by a
	// catalog rebuilt from the default one's operations: all three agree.
	rebuilt, err := NewCatalog(DefaultCatalog().Operations()...)
	if err != nil {
		t.Fatal(err)
	}
	deciders := []struct {
		name   string
		decide func(*ToolCallRequest) (*ToolCallDecision, error)
	}{{"Decide", Decide}, {"DefaultCatalog", DefaultCatalog().Decide}, {"rebuilt catalog", rebuilt.Decide}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, d := range deciders {
				req := tc.build(t)
				got, err := d.decide(req)
				if err != nil {
					t.Fatalf("%s: %v", d.name, err)
				}
				if diff := cmp.Diff(tc.want.decisionFor(got.RequestFingerprint), got); diff != "" {
					t.Errorf("%s (%s), %s: decision mismatch (-want +got):\n%s", tc.name, tc.why, d.name, diff)
				}
			}
		})
	}
}

func blockInvalid(issues ...Issue) want {
	return want{decision: VerdictBlock, enforcement: EnforcementSafeToSkip, codes: []ReasonCode{ReasonInvalidPayload}, confidence: "1", issues: issues}
}

func TestDecideCustomPrice(t *testing.T) {
	r := reusable(t, baseCall())
	r.PreflightPriceUSD = "0.0005"
	got, err := Decide(r)
	if err != nil {
		t.Fatal(err)
	}
	want := Estimate{PreflightCostUSD: "0.0005", PriceChargedUSD: "0", AvoidableExternalCostUSD: "0.01",
		AvoidableModelCostUSD: "0", NetSavingsUSD: "0.0095", Billable: false, Confidence: "0.9"}
	if diff := cmp.Diff(want, got.Estimated); diff != "" {
		t.Errorf("estimated (-want +got):\n%s", diff)
	}
}

func TestDecideIgnoredMembers(t *testing.T) {
	body := `{"runId":"r","stepId":"s","zeta":1,"tool":{"provider":"search","operation":"web_search",
		"request":{"query":"q"},"estimatedExternalCostUsd":0},"budget":{"remainingUsd":1},"alpha/b":{}}`
	got, err := DecideJSON([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := []Issue{
		{Path: "/zeta", Code: IssueUnknownFieldIgnored, Message: `unknown member "zeta" was ignored`},
		{Path: "/alpha~1b", Code: IssueUnknownFieldIgnored, Message: `unknown member "alpha/b" was ignored`},
	}
	if diff := cmp.Diff(want, got.Issues); diff != "" {
		t.Errorf("issues (-want +got):\n%s", diff)
	}
}

// TestFingerprintExact checks what does and does not change a fingerprint.
func TestFingerprintExact(t *testing.T) {
	fp := func(provider, operation, payload string) string {
		r := baseCall()
		r.Tool.Provider, r.Tool.Operation, r.Tool.Request = provider, operation, json.RawMessage(payload)
		return fingerprintOf(t, r)
	}
	base := fp("search", "web_search", `{"query":"a b","max_results":5}`)
	same := map[string]string{
		"key order":       fp("search", "web_search", `{"max_results":5,"query":"a b"}`),
		"number spelling": fp("search", "web_search", `{"query":"a b","max_results":5.0}`),
		"white space":     fp("search", "web_search", "{ \"query\" : \"a b\" ,\n\"max_results\":5e0}"),
	}
	for name, got := range same {
		if got != base {
			t.Errorf("%s changed the fingerprint", name)
		}
	}
	differ := map[string]string{
		"query case":        fp("search", "web_search", `{"query":"A b","max_results":5}`),
		"query white space": fp("search", "web_search", `{"query":"a  b","max_results":5}`),
		"operation alias":   fp("search", "search:web_search", `{"query":"a b","max_results":5}`),
		"other value":       fp("search", "web_search", `{"query":"a b","max_results":6}`),
	}
	for name, got := range differ {
		if got == base {
			t.Errorf("%s did not change the fingerprint", name)
		}
	}
	costs := baseCall()
	costs.Tool.Request = json.RawMessage(`{"query":"a b","max_results":5}`)
	costs.Tool.EstimatedExternalCostUSD, costs.Budget.RemainingUSD, costs.RunID = "0.5", "9", "other-run"
	if got := fingerprintOf(t, costs); got != base {
		t.Errorf("costs, budget or ids changed the fingerprint")
	}
}

func TestDecodeToolCallErrors(t *testing.T) {
	deep := `{"runId":"r","stepId":"s","tool":{"provider":"search","operation":"web_search","request":{"query":"q","x":` +
		strings.Repeat("[", 14) + strings.Repeat("]", 14) + `},"estimatedExternalCostUsd":0},"budget":{"remainingUsd":1}}`
	history := `{"runId":"r","stepId":"s","tool":{"provider":"search","operation":"web_search","request":{"query":"q"},` +
		`"estimatedExternalCostUsd":0},"budget":{"remainingUsd":1},"history":[` +
		strings.TrimSuffix(strings.Repeat(`{"toolCallId":"c","fingerprint":"f","outcome":"success","ageSeconds":1},`, 101), ",") + `]}`
	tests := []struct {
		name string
		body string
		code ErrorCode
		want []Issue
	}{
		{"not an object", `[]`, ErrorInvalidRequest,
			[]Issue{{Path: "", Code: IssueType, Message: "expected an object, found array"}}},
		{"trailing data", `{} {}`, ErrorInvalidJSON,
			[]Issue{{Path: "", Code: IssueInvalidJSON, Message: `expected end of input after the top-level value, found "{"`}}},
		{"too deep", deep, ErrorLimitExceeded,
			[]Issue{{Path: "/tool/request/x/0/0/0/0/0/0/0/0/0/0/0/0/0", Code: IssueMaxDepth, Message: "document is nested deeper than 16 levels"}}},
		{"too much history", history, ErrorLimitExceeded,
			[]Issue{{Path: "/history", Code: IssueMaxHistory, Message: "expected at most 100 history entries, found 101"}}},
		{"ranges and integers", `{"runId":"r","stepId":"s","tool":{"provider":"search","operation":"web_search","request":{},
			"estimatedExternalCostUsd":1000000000.5},"budget":{"remainingUsd":1,"maxToolCallsRemaining":-1},
			"freshnessTtlSeconds":1e10,"retryCap":0,"history":[{"toolCallId":"c","fingerprint":"f","outcome":"ok","ageSeconds":1,"x":1}]}`,
			ErrorInvalidRequest, []Issue{
				{Path: "/tool/estimatedExternalCostUsd", Code: IssueMaximum, Message: "expected a number <= 1000000000, found 1000000000.5"},
				{Path: "/budget/maxToolCallsRemaining", Code: IssueMinimum, Message: "expected an integer >= 0, found -1"},
				{Path: "/history/0/x", Code: IssueUnknownField, Message: `unknown member "x"; expected one of "toolCallId", "fingerprint", "outcome", "resultReference", "ageSeconds", "goalHash"`},
				{Path: "/history/0/outcome", Code: IssueEnum, Message: `expected one of "success", "terminal_failure", "transient_failure", found "ok"`},
				{Path: "/freshnessTtlSeconds", Code: IssueMaximum, Message: "expected a number <= 1000000000, found 1e10"},
				{Path: "/retryCap", Code: IssueMinimum, Message: "expected an integer >= 1, found 0"},
			}},
		{"missing everything", `{}`, ErrorInvalidRequest, []Issue{
			{Path: "/runId", Code: IssueRequired, Message: `missing required member "runId"`},
			{Path: "/stepId", Code: IssueRequired, Message: `missing required member "stepId"`},
			{Path: "/tool", Code: IssueRequired, Message: `missing required member "tool"`},
			{Path: "/budget", Code: IssueRequired, Message: `missing required member "budget"`},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decideBytes([]byte(tc.body))
			e, ok := err.(*Error)
			if !ok {
				t.Fatalf("got error %v, want *Error", err)
			}
			if e.Code != tc.code {
				t.Errorf("code = %s, want %s", e.Code, tc.code)
			}
			if diff := cmp.Diff(tc.want, e.Details, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("details (-want +got):\n%s", diff)
			}
		})
	}
}

func decideBytes(data []byte) (*ToolCallDecision, error) { return DecideJSON(data) }
