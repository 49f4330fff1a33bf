// Package preflight tells an AI agent, before it spends money or quota on a
// tool call, whether the call is worth making.
//
// It offers two capabilities, each a pure function:
//
//   - [Check] validates the JSON body of a proposed HTTP request against a
//     caller-supplied JSON Schema (a 12-keyword subset) and, given cost
//     context, says whether sending it is worth it.
//   - [Decide] looks at a proposed tool call, the caller's budget, history
//     and capabilities, and returns one decision: allow, block, reuse, defer
//     or advise. It knows web search and page fetch; a [Catalog] adds the
//     caller's own tools, each with a payload schema and its effects.
//
// Each capability has two entry points that apply the same input rules and
// limits and give the same answers and errors: one for a request built in Go
// ([Check], [Decide]) and one for the request as JSON bytes ([CheckJSON],
// [DecideJSON]). The reference server and its MCP tools call the JSON forms,
// so in-process, HTTP and MCP callers always get the same answers. Request and
// result types are plain data; [DecodeCheckRequest] and
// [DecodeToolCallRequest] read bytes into them for a caller that wants to
// look at or change a request before deciding.
//
// # What it never does
//
// preflight never sends the proposed request, never executes a tool, never
// fetches a URL, never reads the clock and keeps no state. The same input
// always gives the same output, byte for byte. All functions are safe for
// concurrent use.
//
// # Two kinds of "no"
//
// An invalid payload or a "block" is a result: [Check] and [Decide] return it
// with a nil error. An *[Error] means the call itself could not be evaluated
// (malformed JSON, a broken input rule, an unsupported schema keyword, a limit).
//
// # Numbers and money
//
// Numbers travel as [encoding/json.Number], the decimal text the caller sent.
// Comparisons and arithmetic on money are exact decimal: 0.1 + 0.2 is
// affordable at a budget of 0.3, and no output reads 0.30000000000000004.
package preflight

import "encoding/json"

// Issue is one problem found in a request, its body or its payload.
type Issue struct {
	// Path is an RFC 6901 JSON Pointer into the submitted document, for
	// example "/request/body/items/0/sku". The empty string means the whole
	// document.
	Path string `json:"path"`
	// Code is a stable machine-readable code (see the IssueCode constants).
	Code IssueCode `json:"code"`
	// Message says, for a person, what was expected and what was found.
	Message string `json:"message"`
}

// CheckRequest is the body of POST /check-request: a proposed HTTP request and
// the JSON Schema its body must satisfy.
type CheckRequest struct {
	// Request is the proposed HTTP request. It is never sent.
	Request ProposedRequest `json:"request"`
	// Schema is the JSON Schema applied to Request.Body: an object using only
	// the supported keywords, at most 32,768 bytes.
	Schema json.RawMessage `json:"schema"`
	// Economics is optional cost context; nil means validation-only output.
	Economics *CheckEconomics `json:"economics,omitempty"`
}

// ProposedRequest is the HTTP request an agent is about to send.
type ProposedRequest struct {
	// Method is the HTTP method name, an RFC 9110 token such as "POST".
	Method string `json:"method"`
	// URL is an absolute http or https URL with a host and, if it has a
	// port, a port of 0 to 65535. It is never fetched.
	URL string `json:"url"`
	// Headers maps header names to values. Credentials do not belong here:
	// Authorization, Cookie, API-key headers and the like draw a warning.
	Headers map[string]string `json:"headers,omitempty"`
	// Query is an optional JSON object of query parameters (any values).
	Query json.RawMessage `json:"query,omitempty"`
	// Body is the JSON body; nil means the request has no body. It is the
	// only value that is validated against the schema.
	Body json.RawMessage `json:"body,omitempty"`
}

// CheckEconomics is the optional cost context of a check. Numbers are
// non-negative decimals no greater than 1,000,000,000.
type CheckEconomics struct {
	// DownstreamCostUSD is what an attempt at the target API costs. Required.
	DownstreamCostUSD json.Number `json:"downstreamCostUsd"`
	// BillsOnInvalidRequest is true when the target API charges or consumes
	// quota on a 4xx. Required.
	BillsOnInvalidRequest bool `json:"billsOnInvalidRequest"`
	// RetryCostUSD is the model/tool-turn cost of one failed attempt. Required.
	RetryCostUSD json.Number `json:"retryCostUsd"`
	// PriorInvalidProbability is the prior probability, 0..1, that a payload
	// is doomed. Empty means 0.25.
	PriorInvalidProbability json.Number `json:"priorInvalidProbability,omitempty"`
	// PreflightPriceUSD is the price of this check. Empty means 0.001.
	PreflightPriceUSD json.Number `json:"preflightPriceUsd,omitempty"`
	// BudgetRemainingUSD is the agent's remaining budget; empty means unknown.
	BudgetRemainingUSD json.Number `json:"budgetRemainingUsd,omitempty"`
}

// CheckResult is the answer to a [CheckRequest]. Valid false is still a
// completed check: the body (or a keyword of the schema) failed validation.
type CheckResult struct {
	// Valid is true when Errors is empty: the body satisfies the schema.
	Valid bool `json:"valid"`
	// Errors lists every validation failure (at most 100), in the order the
	// body is walked. Never nil.
	Errors []Issue `json:"errors"`
	// Warnings lists advice that does not make the body invalid. Never nil.
	Warnings []Issue `json:"warnings"`
	// RequestHash is the hex SHA-256 of the RFC 8785 canonical form of the
	// normalized request plus schema.
	RequestHash string `json:"requestHash"`
	// Economics is present only when the request carried economics.
	Economics *EconomicsResult `json:"economics,omitempty"`
}

// EconomicsResult is the proceed/abort advice of a check with cost context.
//
// The figures are exact decimals computed from the request's
// [CheckEconomics], with D = DownstreamCostUSD, R = RetryCostUSD,
// P = PreflightPriceUSD (default 0.001), p = PriorInvalidProbability
// (default 0.25) and loss = R, plus D when BillsOnInvalidRequest.
type EconomicsResult struct {
	// Advice is proceed when the body is valid, abort when it is not.
	Advice Advice `json:"decision"`
	// Reason says why: valid, or invalid_doomed_request.
	Reason AdviceReason `json:"reason"`
	// PreflightPriceUSD is P, the price of this check as modeled.
	PreflightPriceUSD json.Number `json:"preflightPriceUsd"`
	// WasteIfSentUSD is what sending this body would waste: loss when it is
	// invalid, else 0.
	WasteIfSentUSD json.Number `json:"wasteIfSentUsd"`
	// RealizedNetUSD is WasteIfSentUSD − P: what this check saved (negative
	// when it cost more than it saved).
	RealizedNetUSD json.Number `json:"realizedNetUsd"`
	// WorthCheckingAPriori is APrioriExpectedNetUSD > 0: whether checking
	// pays on average, before knowing the answer.
	WorthCheckingAPriori bool `json:"worthCheckingAPriori"`
	// APrioriExpectedWasteUSD is p × loss, the waste expected from sending
	// unchecked.
	APrioriExpectedWasteUSD json.Number `json:"aPrioriExpectedWasteUsd"`
	// APrioriExpectedNetUSD is p × loss − P.
	APrioriExpectedNetUSD json.Number `json:"aPrioriExpectedNetUsd"`
}

// ToolCallRequest is the body of POST /v0.2/preflight/tool-call: a proposed
// search or browse tool call with the caller's budget, history and
// capabilities. History, scope and budget are the caller's own assertions.
type ToolCallRequest struct {
	// RunID identifies the caller's run; non-empty. It does not enter the
	// fingerprint.
	RunID string `json:"runId"`
	// StepID identifies the step within the run; non-empty.
	StepID string `json:"stepId"`
	// Tool is the proposed call.
	Tool ToolCall `json:"tool"`
	// Budget is what the caller can still spend.
	Budget Budget `json:"budget"`
	// Task is optional; its GoalHash must match a history entry's for reuse.
	Task *Task `json:"task,omitempty"`
	// History lists at most 100 prior outcomes the caller recorded.
	History []HistoryEntry `json:"history,omitempty"`
	// Capabilities says what the caller is able to do instead of calling.
	Capabilities *Capabilities `json:"capabilities,omitempty"`
	// FreshnessTTLSeconds, 0..1,000,000,000, is how old a prior result may be
	// and still be reused. Empty or zero disables reuse.
	FreshnessTTLSeconds json.Number `json:"freshnessTtlSeconds,omitempty"`
	// RetryCap, an integer >= 1, is how many terminal failures of the same
	// call end retrying. Empty means the default, 1.
	RetryCap json.Number `json:"retryCap,omitempty"`
	// PreflightPriceUSD is the modeled fee of this consultation. Empty means
	// 0.002. It never changes the price actually settled over HTTP.
	PreflightPriceUSD json.Number `json:"preflightPriceUsd,omitempty"`
}

// ToolCall is the proposed tool call.
type ToolCall struct {
	// Provider and Operation name the tool. The default catalog knows
	// provider "search" with "web_search" or "search:web_search", and
	// "browse" with "fetch" or "browse:fetch"; a [Catalog] may know more.
	// Others are answered with advise / UNSUPPORTED_OPERATION.
	Provider  string `json:"provider"`
	Operation string `json:"operation"`
	// Request is the provider-specific payload, a JSON object, checked
	// against the operation's schema: search {"query": 1..500 chars,
	// "max_results"?: 1..10}; browse {"url": absolute http(s) URL}.
	Request json.RawMessage `json:"request"`
	// EstimatedExternalCostUSD is the caller's estimate of the provider cost.
	EstimatedExternalCostUSD json.Number `json:"estimatedExternalCostUsd"`
	// EstimatedModelCostUSD is the model cost of the call; empty means 0.
	EstimatedModelCostUSD json.Number `json:"estimatedModelCostUsd,omitempty"`
}

// Budget is what the caller can still spend, after deducting the fee of this
// consultation (the service does not subtract it).
type Budget struct {
	// RemainingUSD is the money left, 0..1,000,000,000. Required.
	RemainingUSD json.Number `json:"remainingUsd"`
	// ReservedUSD is money already promised to calls in flight; empty means 0.
	ReservedUSD json.Number `json:"reservedUsd,omitempty"`
	// MaxToolCallsRemaining, an integer >= 0, limits the number of calls;
	// empty means no limit.
	MaxToolCallsRemaining json.Number `json:"maxToolCallsRemaining,omitempty"`
}

// Task correlates a call with the goal it serves.
type Task struct {
	// GoalHash is an opaque goal token; reuse needs it non-empty and equal
	// to the history entry's.
	GoalHash string `json:"goalHash"`
}

// Capabilities says what the caller can do instead of making the call. A
// nil *Capabilities means neither.
type Capabilities struct {
	// CanReusePriorResult is true when the caller can use a saved result
	// instead of calling; without it there is never a reuse verdict (a
	// fresh success then adds REUSE_NOT_PERMITTED).
	CanReusePriorResult bool `json:"canReusePriorResult"`
	// CanReduceScope is true when the caller can make a narrower call;
	// without it there is never a reduce_scope advice.
	CanReduceScope bool `json:"canReduceScope"`
}

// HistoryEntry is one prior outcome recorded by the caller after its real
// tool call completed.
type HistoryEntry struct {
	// ToolCallID is the caller's identifier of the call, echoed as the
	// decision's MatchedCallID when this entry decides. Required.
	ToolCallID string `json:"toolCallId"`
	// Fingerprint is the RequestFingerprint a decision returned for the
	// call; only entries with the proposal's fingerprint count. Required.
	Fingerprint string `json:"fingerprint"`
	// Outcome is how the call ended. Required.
	Outcome Outcome `json:"outcome"`
	// ResultReference is the caller's pointer to the saved result; a
	// success can be reused only when it is non-empty.
	ResultReference string `json:"resultReference,omitempty"`
	// AgeSeconds, 0..1,000,000,000, is how long ago the call completed,
	// kept current by the caller. Required.
	AgeSeconds json.Number `json:"ageSeconds"`
	// GoalHash is the Task.GoalHash the call served; reuse needs it equal
	// to the proposal's.
	GoalHash string `json:"goalHash,omitempty"`
}

// ToolCallDecision is the answer to a [ToolCallRequest]. It is a
// recommendation; nothing has been executed.
type ToolCallDecision struct {
	// Verdict is what to do with the call (the JSON member "decision").
	Verdict Verdict `json:"decision"`
	// Enforcement is how firmly to apply the verdict.
	Enforcement Enforcement `json:"enforcement"`
	// ReasonCodes explain the verdict; the first names the rule that
	// decided. Never empty.
	ReasonCodes []ReasonCode `json:"reasonCodes"`
	// RequestFingerprint identifies the exact proposal; record it in history
	// after the real call completes.
	RequestFingerprint string `json:"requestFingerprint"`
	// MatchedCallID is the history entry behind a reuse or a retry cap.
	MatchedCallID string `json:"matchedCallId,omitempty"`
	// Issues lists payload problems and ignored members. Never nil.
	Issues []Issue `json:"issues"`
	// Estimated holds the modeled dollar figures.
	Estimated Estimate `json:"estimated"`
	// Recommendation is set on a reuse verdict and on reduce_scope advice.
	Recommendation *Recommendation `json:"recommendation,omitempty"`
}

// Estimate holds the modeled dollar figures of a decision, exact decimals.
// They are model output, not observed savings and not a settlement
// receipt: over HTTP, what was paid is only what the PAYMENT-RESPONSE
// header says.
type Estimate struct {
	// PreflightCostUSD is the request's PreflightPriceUSD (default 0.002).
	PreflightCostUSD json.Number `json:"preflightCostUsd"`
	// PriceChargedUSD is a legacy field of the wire format: always 0.
	PriceChargedUSD json.Number `json:"priceChargedUsd"`
	// AvoidableExternalCostUSD is the call's estimated external cost on a
	// reuse verdict, else 0.
	AvoidableExternalCostUSD json.Number `json:"avoidableExternalCostUsd"`
	// AvoidableModelCostUSD is a legacy field of the wire format: always 0.
	AvoidableModelCostUSD json.Number `json:"avoidableModelCostUsd"`
	// NetSavingsUSD is AvoidableExternalCostUSD − PreflightCostUSD.
	NetSavingsUSD json.Number `json:"netSavingsUsd"`
	// Billable is a legacy field of the wire format: always false.
	Billable bool `json:"billable"`
	// Confidence is a constant of the rule that decided, not a calibrated
	// probability.
	Confidence json.Number `json:"confidence"`
}

// Recommendation tells the caller what to do instead of the call.
type Recommendation struct {
	// Action is what to do instead: reuse_result or reduce_scope.
	Action RecommendedAction `json:"action"`
	// ResultReference echoes the caller's reference on reuse.
	ResultReference string `json:"resultReference,omitempty"`
}
