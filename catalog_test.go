package preflight

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// quoteSchema is the payload schema of a paid market-data API.
const quoteSchema = `{"type":"object","required":["symbol"],
	"properties":{"symbol":{"type":"string","pattern":"^[A-Z]{1,5}$"},
	"fields":{"type":"array","items":{"enum":["bid","ask","last"]}},
	"depth":{"type":"integer","minimum":1,"maximum":50}},
	"additionalProperties":false}`

func yes() *bool { b := true; return &b }
func no() *bool  { b := false; return &b }

// testCatalog has one operation of each kind of effects.
func testCatalog(t *testing.T) *Catalog {
	t.Helper()
	c, err := NewCatalog(
		Operation{Provider: "marketdata", Name: "get_quote", Aliases: []string{"quote"},
			Schema: json.RawMessage(quoteSchema), Effects: EffectsReadOnly},
		Operation{Provider: "email", Name: "send_email",
			Schema: json.RawMessage(`{"type":"object","required":["to","subject"],
				"properties":{"to":{"type":"string","description":"recipient"},"subject":{"type":"string","title":"Subject"}}}`),
			Annotations: &ToolAnnotations{ReadOnlyHint: no(), DestructiveHint: no()}},
		Operation{Provider: "fs", Name: "delete_file", Annotations: &ToolAnnotations{DestructiveHint: yes()}},
		Operation{Provider: "crm", Name: "lookup", Effects: EffectsSideEffecting,
			Annotations: &ToolAnnotations{ReadOnlyHint: yes()}}, // the explicit setting wins
		Operation{Provider: "notes", Name: "read", Annotations: &ToolAnnotations{ReadOnlyHint: yes()}},
	)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func customCall(provider, operation, payload string) *ToolCallRequest {
	r := baseCall()
	r.Tool.Provider, r.Tool.Operation, r.Tool.Request = provider, operation, json.RawMessage(payload)
	return r
}

// reusableIn is reusable for a catalog's decision.
func reusableIn(t *testing.T, c *Catalog, req *ToolCallRequest) *ToolCallRequest {
	t.Helper()
	d, err := c.Decide(req)
	if err != nil {
		t.Fatal(err)
	}
	req.Capabilities = &Capabilities{CanReusePriorResult: true}
	req.FreshnessTTLSeconds = "3600"
	req.Task = &Task{GoalHash: "goal-a"}
	req.History = append(req.History, HistoryEntry{ToolCallID: "call-ok", Fingerprint: d.RequestFingerprint,
		Outcome: OutcomeSuccess, ResultReference: "results/ok.json", AgeSeconds: "60", GoalHash: "goal-a"})
	return req
}

func withTerminal(t *testing.T, c *Catalog, req *ToolCallRequest, n int, retryCap string) *ToolCallRequest {
	t.Helper()
	d, err := c.Decide(req)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		req.History = append(req.History, terminal(d.RequestFingerprint, "call-t"+string(rune('0'+i)), "10"))
	}
	req.RetryCap = json.Number(retryCap)
	return req
}

// TestCatalogRules runs the generic rules for custom operations.
func TestCatalogRules(t *testing.T) {
	c := testCatalog(t)
	quote := func() *ToolCallRequest { return customCall("marketdata", "get_quote", `{"symbol":"ACME","depth":5}`) }
	reuse := want{decision: VerdictReuse, enforcement: EnforcementSafeToSkip, codes: []ReasonCode{ReasonReuseFreshResult}, matched: "call-ok",
		recommendation: &Recommendation{Action: ActionReuseResult, ResultReference: "results/ok.json"}, confidence: "0.9",
		avoidable: "0.01", net: "0.008"}
	allowNotReused := want{decision: VerdictAllow, enforcement: EnforcementExecute, codes: []ReasonCode{ReasonNoProvenWaste, ReasonReuseNotPermitted}, confidence: "0.5"}
	tests := []struct {
		name  string
		build func(t *testing.T) *ToolCallRequest
		want  want
	}{
		{"valid custom call is allowed", func(t *testing.T) *ToolCallRequest { return quote() }, allow},
		{"alias is decided as the operation", func(t *testing.T) *ToolCallRequest {
			return customCall("marketdata", "quote", `{"symbol":"ACME"}`)
		}, allow},
		{"no schema means any object", func(t *testing.T) *ToolCallRequest {
			return customCall("fs", "delete_file", `{"path":"/tmp/x","anything":[1,{"a":null}]}`)
		}, allow},
		{"annotations are ignored in a catalog schema", func(t *testing.T) *ToolCallRequest {
			return customCall("email", "send_email", `{"to":"a@example.com","subject":"hi"}`)
		}, allow},
		{"read-only custom operation is reused", func(t *testing.T) *ToolCallRequest { return reusableIn(t, c, quote()) }, reuse},
		{"readOnlyHint makes an operation reusable", func(t *testing.T) *ToolCallRequest {
			return reusableIn(t, c, customCall("notes", "read", `{"id":1}`))
		}, reuse},
		{"side-effecting operation is never reused", func(t *testing.T) *ToolCallRequest {
			return reusableIn(t, c, customCall("email", "send_email", `{"to":"a@example.com","subject":"hi"}`))
		}, allowNotReused},
		{"destructive operation is never reused", func(t *testing.T) *ToolCallRequest {
			return reusableIn(t, c, customCall("fs", "delete_file", `{"path":"/tmp/x"}`))
		}, allowNotReused},
		{"explicit effects win over readOnlyHint", func(t *testing.T) *ToolCallRequest {
			return reusableIn(t, c, customCall("crm", "lookup", `{"id":1}`))
		}, allowNotReused},
		{"retry cap reached", func(t *testing.T) *ToolCallRequest { return withTerminal(t, c, quote(), 2, "2") },
			want{decision: VerdictBlock, enforcement: EnforcementSafeToSkip, codes: []ReasonCode{ReasonRetryCapReached}, matched: "call-t1", confidence: "0.9"}},
		{"below the retry cap", func(t *testing.T) *ToolCallRequest { return withTerminal(t, c, quote(), 1, "2") },
			want{decision: VerdictAllow, enforcement: EnforcementExecute, codes: []ReasonCode{ReasonNoProvenWaste, ReasonPriorTerminalFailure}, confidence: "0.5"}},
		{"side-effecting operation keeps the caller's retry cap", func(t *testing.T) *ToolCallRequest {
			return withTerminal(t, c, customCall("email", "send_email", `{"to":"a","subject":"s"}`), 1, "3")
		}, want{decision: VerdictAllow, enforcement: EnforcementExecute, codes: []ReasonCode{ReasonNoProvenWaste, ReasonPriorTerminalFailure}, confidence: "0.5"}},
		{"destructive operation is not retried after a terminal failure", func(t *testing.T) *ToolCallRequest {
			return withTerminal(t, c, customCall("fs", "delete_file", `{"path":"/tmp/x"}`), 1, "3")
		}, want{decision: VerdictBlock, enforcement: EnforcementSafeToSkip, codes: []ReasonCode{ReasonRetryCapReached}, matched: "call-t0", confidence: "0.9"}},
		{"call limit", func(t *testing.T) *ToolCallRequest {
			r := quote()
			r.Budget.MaxToolCallsRemaining = "0"
			return r
		}, want{decision: VerdictDefer, enforcement: EnforcementSafeToSkip, codes: []ReasonCode{ReasonCallLimitReached}, confidence: "1"}},
		{"budget", func(t *testing.T) *ToolCallRequest {
			r := quote()
			r.Budget.RemainingUSD = "0.009"
			return r
		}, want{decision: VerdictDefer, enforcement: EnforcementSafeToSkip, codes: []ReasonCode{ReasonBudgetExceeded}, confidence: "1"}},
		{"reduce scope", func(t *testing.T) *ToolCallRequest {
			r := quote()
			r.Budget.RemainingUSD = "0.015"
			r.Capabilities = &Capabilities{CanReduceScope: true}
			return r
		}, want{decision: VerdictAdvise, enforcement: EnforcementAdvisory, codes: []ReasonCode{ReasonReduceScope},
			recommendation: &Recommendation{Action: ActionReduceScope}, confidence: "0.6"}},
		{"built-in operations are not in a custom catalog", func(t *testing.T) *ToolCallRequest { return baseCall() },
			want{decision: VerdictAdvise, enforcement: EnforcementAdvisory, codes: []ReasonCode{ReasonUnsupportedOperation}, confidence: "1",
				issues: []Issue{{Path: "/tool/provider", Code: IssueUnknownOperation, Message: `the catalog has no operation "web_search" for provider "search"; it has "marketdata/get_quote", "email/send_email", "fs/delete_file", "crm/lookup", "notes/read"`}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.Decide(tc.build(t))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want.decisionFor(got.RequestFingerprint), got); diff != "" {
				t.Errorf("decision mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCatalogPayloadIssuesMatchCheck: a payload failing its schema is a
// block whose issues are exactly Check's errors for the same body.
func TestCatalogPayloadIssuesMatchCheck(t *testing.T) {
	c := testCatalog(t)
	payloads := []string{
		`{}`,
		`{"symbol":"acme"}`,
		`{"symbol":"ACME","fields":["bid","volume"],"depth":0.5,"extra":true}`,
		`{"symbol":7,"depth":51}`,
	}
	for _, p := range payloads {
		res, err := Check(&CheckRequest{
			Request: ProposedRequest{Method: "POST", URL: "https://api.example.com/quote", Body: json.RawMessage(p)},
			Schema:  json.RawMessage(quoteSchema),
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Valid {
			t.Fatalf("%s: Check says valid; the case is meant to fail", p)
		}
		var want []Issue
		for _, is := range res.Errors {
			is.Path = "/tool/request" + strings.TrimPrefix(is.Path, "/request/body")
			want = append(want, is)
		}
		got, err := c.Decide(customCall("marketdata", "get_quote", p))
		if err != nil {
			t.Fatal(err)
		}
		if got.Verdict != VerdictBlock || got.ReasonCodes[0] != ReasonInvalidPayload {
			t.Errorf("%s: decision %s %v, want block INVALID_PAYLOAD", p, got.Verdict, got.ReasonCodes)
		}
		if diff := cmp.Diff(want, got.Issues); diff != "" {
			t.Errorf("%s: issues differ from Check's (-check +decide):\n%s", p, diff)
		}
	}
}

// TestCatalogAliasFingerprints: a name and its alias are one operation but
// not one fingerprint, as with the built-ins.
func TestCatalogAliasFingerprints(t *testing.T) {
	c := testCatalog(t)
	fp := func(c *Catalog, provider, op, payload string) string {
		d, err := c.Decide(customCall(provider, op, payload))
		if err != nil {
			t.Fatal(err)
		}
		return d.RequestFingerprint
	}
	if a, b := fp(c, "marketdata", "get_quote", `{"symbol":"A"}`), fp(c, "marketdata", "quote", `{"symbol":"A"}`); a == b {
		t.Error("custom alias shares its name's fingerprint")
	}
	if a, b := fp(nil, "search", "web_search", `{"query":"q"}`), fp(nil, "search", "search:web_search", `{"query":"q"}`); a == b {
		t.Error("built-in alias shares its name's fingerprint")
	}
	// A history entry recorded under the name does not make the alias reusable.
	r := reusableIn(t, c, customCall("marketdata", "get_quote", `{"symbol":"A"}`))
	r.Tool.Operation = "quote"
	d, err := c.Decide(r)
	if err != nil {
		t.Fatal(err)
	}
	if d.Verdict != VerdictAllow {
		t.Errorf("alias with history under the name: %s %v, want allow", d.Verdict, d.ReasonCodes)
	}
}

func TestCatalogUnknownOperation(t *testing.T) {
	tests := []struct {
		provider, operation string
		want                []Issue
	}{
		{"search", "websearch", []Issue{
			{Path: "/tool/operation", Code: IssueUnknownOperation, Message: `the catalog has no operation "websearch" for provider "search"; it has "search/web_search", "browse/fetch"`},
			{Path: "/tool/operation", Code: IssueSimilarOperation, Message: `did you mean "search/web_search"? (one edit away; the call is not decided as that operation)`},
		}},
		{"browse", "fecth", []Issue{
			{Path: "/tool/operation", Code: IssueUnknownOperation, Message: `the catalog has no operation "fecth" for provider "browse"; it has "search/web_search", "browse/fetch"`},
			{Path: "/tool/operation", Code: IssueSimilarOperation, Message: `did you mean "browse/fetch"? (one edit away; the call is not decided as that operation)`},
		}},
		{"serch", "web_search", []Issue{
			{Path: "/tool/provider", Code: IssueUnknownOperation, Message: `the catalog has no operation "web_search" for provider "serch"; it has "search/web_search", "browse/fetch"; "web_search" is an operation of provider "search"`},
			{Path: "/tool/provider", Code: IssueSimilarOperation, Message: `did you mean "search/web_search"? (one edit away; the call is not decided as that operation)`},
		}},
		{"search", "web", []Issue{
			{Path: "/tool/operation", Code: IssueUnknownOperation, Message: `the catalog has no operation "web" for provider "search"; it has "search/web_search", "browse/fetch"`},
		}},
	}
	for _, tc := range tests {
		d, err := Decide(customCall(tc.provider, tc.operation, `{}`))
		if err != nil {
			t.Fatal(err)
		}
		if d.Verdict != VerdictAdvise || d.Enforcement != EnforcementAdvisory || d.ReasonCodes[0] != ReasonUnsupportedOperation {
			t.Errorf("%s/%s: %s %s %v, want advise advisory UNSUPPORTED_OPERATION", tc.provider, tc.operation, d.Verdict, d.Enforcement, d.ReasonCodes)
		}
		if diff := cmp.Diff(tc.want, d.Issues); diff != "" {
			t.Errorf("%s/%s: issues (-want +got):\n%s", tc.provider, tc.operation, diff)
		}
	}
}

func TestOneEditApart(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"web_search", "web_search", false},
		{"websearch", "web_search", true},   // deleted
		{"web_searchh", "web_search", true}, // inserted
		{"web_saerch", "web_search", true},  // swapped
		{"web_seerch", "web_search", true},  // replaced
		{"Web_Search", "web_search", true},  // letter case only
		{"wbe_saerch", "web_search", false}, // two swaps
		{"web", "web_search", false},        // many deleted
		{"fetch", "fetches", false},         // two inserted
		{"fétch", "fetch", true},            // one rune, two bytes
		{"", "a", true},
		{"ab", "ba", true},
		{"abc", "ca", false},
		{strings.Repeat("web_search", 10000), "web_search", false},
		{"\u212a\u212a\u212a", "kkk", true}, // Kelvin signs fold to k
	}
	for _, tc := range tests {
		if got := oneEditApart(tc.a, tc.b); got != tc.want {
			t.Errorf("oneEditApart(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
		if got := oneEditApart(tc.b, tc.a); got != tc.want {
			t.Errorf("oneEditApart(%q, %q) = %v, want %v", tc.b, tc.a, got, tc.want)
		}
	}
}

func TestNewCatalogErrors(t *testing.T) {
	tests := []struct {
		name string
		ops  []Operation
		code ErrorCode
		want []Issue
	}{
		{"missing names", []Operation{{}}, ErrorInvalidRequest, []Issue{
			{Path: "/0/provider", Code: IssueRequired, Message: "expected a non-empty provider"},
			{Path: "/0/name", Code: IssueRequired, Message: "expected a non-empty operation name"},
		}},
		{"duplicates", []Operation{
			{Provider: "p", Name: "a", Aliases: []string{"b"}},
			{Provider: "p", Name: "b", Aliases: []string{"c", "a", ""}},
			{Provider: "q", Name: "a"}, // another provider: fine
		}, ErrorInvalidRequest, []Issue{
			{Path: "/1/name", Code: IssueDuplicateOperation, Message: `operation "p/b" is already declared at /0`},
			{Path: "/1/aliases/1", Code: IssueDuplicateOperation, Message: `operation "p/a" is already declared at /0`},
			{Path: "/1/aliases/2", Code: IssueRequired, Message: "expected a non-empty alias"},
		}},
		{"effects out of range", []Operation{{Provider: "p", Name: "a", Effects: 9}}, ErrorInvalidRequest, []Issue{
			{Path: "/0/effects", Code: IssueEnum, Message: "expected one of the Effects constants, found Effects(9)"},
		}},
		{"a $ref to another document", []Operation{
			{Provider: "p", Name: "ok", Schema: json.RawMessage(`{"type":"object","properties":{"u":{"type":"string","format":"uri"}},"anyOf":[{"required":["u"]}]}`)},
			{Provider: "p", Name: "a", Schema: json.RawMessage(`{"type":"object","properties":{"u":{"$ref":"https://example.com/u.json#/$defs/u"}}}`)},
		}, ErrorUnsupportedSchemaKeyword, []Issue{
			{Path: "/1/schema/properties/u/$ref", Code: IssueUnsupportedSchemaKeyword, Message: `the reference "https://example.com/u.json#/$defs/u" names "https://example.com/u.json", a document outside this schema; references are resolved only within the schema (never fetched)`},
		}},
		{"a $ref to a missing anchor", []Operation{{Provider: "p", Name: "a", Schema: json.RawMessage(`{"type":"object","$defs":{"x":{"$anchor":"x"}},"properties":{"u":{"$ref":"#y"}}}`)}},
			ErrorUnsupportedSchemaKeyword, []Issue{
				{Path: "/0/schema/properties/u/$ref", Code: IssueUnsupportedSchemaKeyword, Message: `the reference "#y" names anchor "y", which the schema does not define`},
			}},
		{"another dialect", []Operation{{Provider: "p", Name: "a", Schema: json.RawMessage(`{"$schema":"http://json-schema.org/draft-04/schema#","type":"object"}`)}},
			ErrorUnsupportedSchemaKeyword, []Issue{
				{Path: "/0/schema/$schema", Code: IssueUnsupportedSchemaKeyword, Message: `keyword "$schema" must name JSON Schema 2020-12 (https://json-schema.org/draft/2020-12/schema), 2019-09, draft-07 or draft-06, found "http://json-schema.org/draft-04/schema#"`},
			}},
		{"ill-formed keyword", []Operation{{Provider: "p", Name: "a", Schema: json.RawMessage(`{"type":"object","minLength":-1}`)}},
			ErrorInvalidSchema, []Issue{
				{Path: "/0/schema/minLength", Code: IssueInvalidSchema, Message: "expected a non-negative integer, found -1"},
			}},
		{"schema not an object", []Operation{{Provider: "p", Name: "a", Schema: json.RawMessage(`true`)}},
			ErrorInvalidSchema, []Issue{
				{Path: "/0/schema", Code: IssueInvalidSchema, Message: "expected the schema to be a JSON object, found boolean"},
			}},
		{"pattern RE2 cannot compile", []Operation{{Provider: "p", Name: "a", Schema: json.RawMessage(`{"pattern":"(?=x)"}`)}},
			ErrorUnsupportedPattern, nil},
		{"schema not JSON", []Operation{{Provider: "p", Name: "a", Schema: json.RawMessage(`{"type":}`)}},
			ErrorInvalidJSON, nil},
		{"schema too large", []Operation{{Provider: "p", Name: "a", Schema: json.RawMessage(`{"description":"` + strings.Repeat("x", 32768) + `"}`)}},
			ErrorSchemaTooLarge, []Issue{{Path: "/0/schema", Code: IssueSchemaTooLarge, Message: "expected at most 32768 bytes, found 32786"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewCatalog(tc.ops...)
			var e *Error
			if !errors.As(err, &e) || c != nil {
				t.Fatalf("NewCatalog = %v, %v; want nil and an *Error", c, err)
			}
			if e.Code != tc.code {
				t.Errorf("code %s, want %s (%v)", e.Code, tc.code, e)
			}
			if tc.want == nil {
				if len(e.Details) == 0 || !strings.HasPrefix(e.Details[0].Path, "/0/schema") {
					t.Errorf("details %v, want a pointer under /0/schema", e.Details)
				}
				return
			}
			if diff := cmp.Diff(tc.want, e.Details); diff != "" {
				t.Errorf("details (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCheckStillRejectsAnnotations: only catalog schemas ignore
// annotation keywords; Check keeps the specification's rule.
func TestCheckStillRejectsAnnotations(t *testing.T) {
	for _, kw := range []string{`"title":"t"`, `"description":"d"`, `"default":1`, `"examples":[1]`, `"$comment":"c"`,
		`"deprecated":true`, `"readOnly":true`, `"writeOnly":true`, `"$schema":"https://json-schema.org/draft/2020-12/schema"`,
		`"$schema":"http://json-schema.org/draft-07/schema#"`, `"$schema":"https://json-schema.org/draft/2019-09/schema"`} {
		schema := json.RawMessage(`{"type":"object",` + kw + `}`)
		_, err := Check(&CheckRequest{Request: ProposedRequest{Method: "POST", URL: "https://a.example/", Body: json.RawMessage(`{}`)}, Schema: schema})
		var e *Error
		if !errors.As(err, &e) || e.Code != ErrorUnsupportedSchemaKeyword {
			t.Errorf("Check with %s: %v, want unsupported_schema_keyword", kw, err)
		}
		if _, err := NewCatalog(Operation{Provider: "p", Name: "a", Schema: schema}); err != nil {
			t.Errorf("NewCatalog with %s: %v", kw, err)
		}
	}
}

// TestCatalogImmutable: changing what was passed in, or what Operations
// returned, changes nothing; a catalog serves concurrent callers (run
// with -race).
func TestCatalogImmutable(t *testing.T) {
	schema := []byte(`{"type":"object","required":["symbol"]}`)
	ops := []Operation{{Provider: "m", Name: "q", Aliases: []string{"quote"}, Schema: schema, Annotations: &ToolAnnotations{ReadOnlyHint: yes()}}}
	c, err := NewCatalog(ops...)
	if err != nil {
		t.Fatal(err)
	}
	copy(schema, `{"type":"string","required":["symbol"]}`)
	ops[0].Aliases[0] = "other"
	*ops[0].Annotations.ReadOnlyHint = false
	listed := c.Operations()
	listed[0].Aliases[0] = "third"
	listed[0].Schema[2] = 'X'

	if got := c.Operations(); got[0].Aliases[0] != "quote" || string(got[0].Schema) != `{"type":"object","required":["symbol"]}` ||
		!*got[0].Annotations.ReadOnlyHint {
		t.Errorf("catalog changed with its inputs: %+v", got[0])
	}
	if e, ok := c.EffectsOf("m", "quote"); !ok || e != EffectsReadOnly {
		t.Errorf("EffectsOf(m, quote) = %v, %v; want read_only", e, ok)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := c.Decide(customCall("m", "quote", `{"symbol":"S`+string(rune('A'+i))+`"}`))
			if err != nil || d.Verdict != VerdictAllow {
				t.Errorf("concurrent decide: %v %v", d, err)
			}
		}()
	}
	wg.Wait()
}

func TestEffectsResolve(t *testing.T) {
	tests := []struct {
		effects Effects
		a       *ToolAnnotations
		want    Effects
	}{
		{EffectsFromAnnotations, nil, EffectsSideEffecting},
		{EffectsFromAnnotations, &ToolAnnotations{}, EffectsDestructive}, // MCP defaults: not read-only, destructive
		{EffectsFromAnnotations, &ToolAnnotations{ReadOnlyHint: yes(), DestructiveHint: yes()}, EffectsReadOnly},
		{EffectsFromAnnotations, &ToolAnnotations{ReadOnlyHint: no(), DestructiveHint: no()}, EffectsSideEffecting},
		{EffectsFromAnnotations, &ToolAnnotations{IdempotentHint: yes(), OpenWorldHint: no()}, EffectsDestructive},
		{EffectsReadOnly, &ToolAnnotations{DestructiveHint: yes()}, EffectsReadOnly},
		{EffectsDestructive, &ToolAnnotations{ReadOnlyHint: yes()}, EffectsDestructive},
	}
	for _, tc := range tests {
		if got := tc.effects.resolve(tc.a); got != tc.want {
			t.Errorf("%v.resolve(%+v) = %v, want %v", tc.effects, tc.a, got, tc.want)
		}
	}
}

// osaDistance is the optimal-string-alignment distance (insert, delete,
// replace, swap of adjacent runes), computed the slow way.
func osaDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}

// FuzzOneEditApart checks the fast comparison against the distance.
func FuzzOneEditApart(f *testing.F) {
	for _, s := range [][2]string{{"websearch", "web_search"}, {"fetch", "fecth"}, {"Fetch", "fetch"}, {"ab", "ba"}, {"fétch", "fetch"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if len(a) > 64 || len(b) > 64 {
			return
		}
		got := oneEditApart(a, b)
		if !utf8.ValidString(a) || !utf8.ValidString(b) {
			return // operation names are decoded JSON strings: valid UTF-8
		}
		want := a != b && (osaDistance(a, b) == 1 || strings.EqualFold(a, b))
		if got != want {
			t.Fatalf("oneEditApart(%q, %q) = %v, distance %d", a, b, got, osaDistance(a, b))
		}
	})
}
