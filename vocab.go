package preflight

// This file gathers every closed vocabulary of the package (each a typed
// string or integer whose constants are prefixed by the first word of its
// type's name, so that a constant's name is its value spelled in Go) and
// the limits of the contract that callers need to know.

// Limits of the contract.
const (
	// MaxHistory is the most entries a ToolCallRequest's History may hold; a
	// request with more is refused with ErrorCode limit_exceeded.
	MaxHistory = 100
	// MaxSchemaBytes is the largest schema accepted, in bytes as sent (a
	// CheckRequest's Schema, an Operation's Schema); a larger one is refused
	// with ErrorCode schema_too_large.
	MaxSchemaBytes = 32768
)

// ErrorCode is the code of an [Error].
type ErrorCode string

// The error codes of the decoders, Check and Decide. The reference server
// answers each with HTTP 400 and adds codes of its own (package server).
const (
	ErrorInvalidJSON              ErrorCode = "invalid_json"               // not JSON: empty, trailing data, invalid UTF-8, duplicate keys
	ErrorInvalidRequest           ErrorCode = "invalid_request"            // JSON, but an input rule is broken
	ErrorLimitExceeded            ErrorCode = "limit_exceeded"             // too deep, too many nodes or history entries
	ErrorUnsupportedSchemaKeyword ErrorCode = "unsupported_schema_keyword" // a keyword outside the subset
	ErrorUnsupportedPattern       ErrorCode = "unsupported_pattern"        // a pattern that is not ECMA-262 (u flag), is not regular, or is too large
	ErrorInvalidSchema            ErrorCode = "invalid_schema"             // a keyword with an ill-formed value
	ErrorSchemaTooLarge           ErrorCode = "schema_too_large"           // schema over 32,768 bytes
)

// IssueCode is the code of an [Issue].
type IssueCode string

// Issue codes of schema validation: the failing keyword.
const (
	IssueType                 IssueCode = "type"
	IssueRequired             IssueCode = "required"
	IssueEnum                 IssueCode = "enum"
	IssueConst                IssueCode = "const"
	IssueMinimum              IssueCode = "minimum"
	IssueMaximum              IssueCode = "maximum"
	IssueMinLength            IssueCode = "minLength"
	IssueMaxLength            IssueCode = "maxLength"
	IssuePattern              IssueCode = "pattern"
	IssueAdditionalProperties IssueCode = "additionalProperties"
	IssueFalseSchema          IssueCode = "false_schema" // a boolean false subschema rejects the value
	IssueAbsoluteURL          IssueCode = "absolute_url" // a browse url that is not absolute http(s) with a host
)

// Issue codes of check warnings.
const (
	IssueSensitiveHeader    IssueCode = "sensitive_header"    // a credential-bearing header was sent to the service
	IssueBodyWithGet        IssueCode = "body_with_get"       // GET or HEAD carrying a body
	IssueBodyAbsent         IssueCode = "body_absent"         // no body, and the schema does not require one
	IssueErrorsTruncated    IssueCode = "errors_truncated"    // more than 100 errors; the rest are not listed
	IssueBudgetInsufficient IssueCode = "budget_insufficient" // downstream cost exceeds the remaining budget
)

// Issue codes of decisions.
const (
	IssueUnknownFieldIgnored IssueCode = "unknown_field_ignored" // an unknown top-level member of a tool-call request
)

// Issue codes in the Details of an [Error]. The five that name the same
// problem as an [ErrorCode] are defined from it, so the two never differ.
const (
	IssueInvalidJSON                        = IssueCode(ErrorInvalidJSON)    // a syntax error at this point
	IssueDuplicateKey             IssueCode = "duplicate_key"                // an object member name appears twice
	IssueInvalidUTF8              IssueCode = "invalid_utf8"                 // a string is not valid UTF-8
	IssueUnknownField             IssueCode = "unknown_field"                // a member this object does not allow
	IssueInteger                  IssueCode = "integer"                      // a number with a fractional part where an integer is needed
	IssueInvalidURL               IssueCode = "invalid_url"                  // not an absolute http(s) URL with a host
	IssueInvalidMethod            IssueCode = "invalid_method"               // not an HTTP method token
	IssueDuplicateHeader          IssueCode = "duplicate_header"             // two header names that differ only in case
	IssuePrecision                IssueCode = "precision"                    // a money value with more than 400 digits after the point
	IssueMaxDepth                 IssueCode = "max_depth"                    // nesting deeper than the limit
	IssueMaxNodes                 IssueCode = "max_nodes"                    // more values than the limit
	IssueMaxWork                  IssueCode = "max_work"                     // validation needs more steps than the limit (see Check)
	IssueMaxHistory               IssueCode = "max_history"                  // more than 100 history entries
	IssueSchemaTooLarge                     = IssueCode(ErrorSchemaTooLarge) // schema over 32,768 bytes
	IssueUnsupportedSchemaKeyword           = IssueCode(ErrorUnsupportedSchemaKeyword)
	IssueUnsupportedPattern                 = IssueCode(ErrorUnsupportedPattern)
	IssueInvalidSchema                      = IssueCode(ErrorInvalidSchema)
)

// Advice is the proceed/abort advice of an [EconomicsResult] (the JSON
// member "decision").
type Advice string

// The advice values.
const (
	AdviceProceed Advice = "proceed" // the body is valid: send it
	AdviceAbort   Advice = "abort"   // the body is invalid: sending it would be wasted
)

// AdviceReason explains an [Advice].
type AdviceReason string

// The advice reasons.
const (
	AdviceReasonValid                AdviceReason = "valid"
	AdviceReasonInvalidDoomedRequest AdviceReason = "invalid_doomed_request"
)

// Outcome is how a recorded tool call ended.
type Outcome string

// The outcomes a caller records.
const (
	OutcomeSuccess          Outcome = "success"           // the call returned a usable result
	OutcomeTerminalFailure  Outcome = "terminal_failure"  // retrying the same call will fail again
	OutcomeTransientFailure Outcome = "transient_failure" // the call may succeed if retried
)

// RecommendedAction is the action of a [Recommendation].
type RecommendedAction string

// The recommended actions.
const (
	ActionReuseResult RecommendedAction = "reuse_result" // use the saved result instead of calling
	ActionReduceScope RecommendedAction = "reduce_scope" // consider a narrower call
)

// Verdict is the decision of a [ToolCallDecision].
type Verdict string

// The verdicts.
const (
	VerdictAllow  Verdict = "allow"  // no rule found waste; not a guarantee of success
	VerdictBlock  Verdict = "block"  // the payload is invalid or the retry cap is reached
	VerdictReuse  Verdict = "reuse"  // a fresh prior result can be used instead
	VerdictDefer  Verdict = "defer"  // the budget or call limit cannot afford the call now
	VerdictAdvise Verdict = "advise" // optional advice, or an unsupported operation
)

// Enforcement is the recommended handling of a [Verdict].
type Enforcement string

// The enforcement values.
const (
	EnforcementExecute    Enforcement = "execute"      // make the call
	EnforcementSafeToSkip Enforcement = "safe_to_skip" // skipping the call loses nothing
	EnforcementAdvisory   Enforcement = "advisory"     // the caller chooses
)

// ReasonCode explains a decision. The first code names the rule that decided;
// codes after it explain why cheaper paths were not taken.
type ReasonCode string

// The reason codes.
const (
	ReasonUnsupportedOperation  ReasonCode = "UNSUPPORTED_OPERATION"   // the service does not model this operation
	ReasonInvalidPayload        ReasonCode = "INVALID_PAYLOAD"         // the payload breaks its rules
	ReasonReuseFreshResult      ReasonCode = "REUSE_FRESH_RESULT"      // a fresh prior success can be reused
	ReasonRetryCapReached       ReasonCode = "RETRY_CAP_REACHED"       // terminal failures reached retryCap
	ReasonCallLimitReached      ReasonCode = "CALL_LIMIT_REACHED"      // maxToolCallsRemaining is 0
	ReasonBudgetExceeded        ReasonCode = "BUDGET_EXCEEDED"         // the estimate exceeds the free budget
	ReasonReduceScope           ReasonCode = "REDUCE_SCOPE"            // the estimate is over half the free budget
	ReasonNoProvenWaste         ReasonCode = "NO_PROVEN_WASTE"         // no rule found waste
	ReasonPriorTransientFailure ReasonCode = "PRIOR_TRANSIENT_FAILURE" // the same call failed transiently before
	ReasonPriorTerminalFailure  ReasonCode = "PRIOR_TERMINAL_FAILURE"  // the same call failed terminally, below the cap
	ReasonReuseNotPermitted     ReasonCode = "REUSE_NOT_PERMITTED"     // a prior success exists but canReusePriorResult is false
	ReasonReuseTTLMissing       ReasonCode = "REUSE_TTL_MISSING"       // a prior success exists but no positive TTL was given
	ReasonReuseGoalMismatch     ReasonCode = "REUSE_GOAL_MISMATCH"     // goal hashes are empty or differ
	ReasonReuseStale            ReasonCode = "REUSE_STALE"             // the prior success is older than the TTL
	ReasonReuseNoReference      ReasonCode = "REUSE_NO_REFERENCE"      // the prior success has no resultReference
)

// Issue codes of catalogs and unsupported operations.
const (
	IssueDuplicateOperation IssueCode = "duplicate_operation" // a catalog names one operation twice
	IssueUnknownOperation   IssueCode = "unknown_operation"   // a decided call names an operation the catalog lacks
	IssueSimilarOperation   IssueCode = "similar_operation"   // ... and one in the catalog is one edit away
)

// Effects is what running an operation does to the world. It decides two
// rules: only a read-only operation may have a prior success stand in for
// a call (reuse), and a destructive one is blocked after its first terminal
// failure, whatever retryCap the caller asks for.
type Effects uint8

// The effects of an operation.
const (
	// EffectsFromAnnotations (the zero value) reads the effects from
	// Operation.Annotations: readOnlyHint true is EffectsReadOnly; otherwise
	// destructiveHint true or absent (MCP's default) is EffectsDestructive,
	// false is EffectsSideEffecting. Without annotations the operation is
	// EffectsSideEffecting.
	EffectsFromAnnotations Effects = iota
	// EffectsReadOnly: the call changes nothing; a fresh prior result may
	// be reused when the caller allows it.
	EffectsReadOnly
	// EffectsSideEffecting: the call changes something (sends a message,
	// creates a record); it is never reused. retryCap applies.
	EffectsSideEffecting
	// EffectsDestructive: the call may destroy or overwrite; it is never
	// reused and never retried after a terminal failure.
	EffectsDestructive
)
