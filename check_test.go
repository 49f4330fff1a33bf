package preflight

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/strictjson"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func checkBytes(data []byte) (*CheckResult, error) { return CheckJSON(data) }

func TestCheckEconomics(t *testing.T) {
	tests := []struct {
		name      string
		valid     bool
		economics string
		want      *EconomicsResult
		warning   *Issue
	}{
		{
			name:      "valid with defaults",
			valid:     true,
			economics: `{"downstreamCostUsd":0.05,"billsOnInvalidRequest":true,"retryCostUsd":0.01}`,
			want: &EconomicsResult{Advice: AdviceProceed, Reason: AdviceReasonValid, PreflightPriceUSD: "0.001",
				WasteIfSentUSD: "0", RealizedNetUSD: "-0.001", WorthCheckingAPriori: true,
				APrioriExpectedWasteUSD: "0.015", APrioriExpectedNetUSD: "0.014"},
		},
		{
			name:      "invalid, billed on 4xx",
			economics: `{"downstreamCostUsd":0.1,"billsOnInvalidRequest":true,"retryCostUsd":0.2,"priorInvalidProbability":0.5,"preflightPriceUsd":0.3}`,
			want: &EconomicsResult{Advice: AdviceAbort, Reason: AdviceReasonInvalidDoomedRequest, PreflightPriceUSD: "0.3",
				WasteIfSentUSD: "0.3", RealizedNetUSD: "0", WorthCheckingAPriori: false,
				APrioriExpectedWasteUSD: "0.15", APrioriExpectedNetUSD: "-0.15"},
		},
		{
			name:      "invalid, not billed on 4xx",
			economics: `{"downstreamCostUsd":5,"billsOnInvalidRequest":false,"retryCostUsd":0.004,"priorInvalidProbability":0.25}`,
			want: &EconomicsResult{Advice: AdviceAbort, Reason: AdviceReasonInvalidDoomedRequest, PreflightPriceUSD: "0.001",
				WasteIfSentUSD: "0.004", RealizedNetUSD: "0.003", WorthCheckingAPriori: false,
				APrioriExpectedWasteUSD: "0.001", APrioriExpectedNetUSD: "0"},
		},
		{
			name:      "budget insufficient",
			valid:     true,
			economics: `{"downstreamCostUsd":0.30000000000000001,"billsOnInvalidRequest":false,"retryCostUsd":0,"budgetRemainingUsd":0.3}`,
			want: &EconomicsResult{Advice: AdviceProceed, Reason: AdviceReasonValid, PreflightPriceUSD: "0.001",
				WasteIfSentUSD: "0", RealizedNetUSD: "-0.001", WorthCheckingAPriori: false,
				APrioriExpectedWasteUSD: "0", APrioriExpectedNetUSD: "-0.001"},
			warning: &Issue{Path: "/economics/budgetRemainingUsd", Code: IssueBudgetInsufficient,
				Message: "the downstream cost 0.30000000000000001 exceeds the remaining budget 0.3"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := `1`
			if !tc.valid {
				body = `"one"`
			}
			got, err := checkBytes([]byte(`{"request":{"method":"POST","url":"https://api.example.com/v1","body":` + body +
				`},"schema":{"type":"integer"},"economics":` + tc.economics + `}`))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.Economics); diff != "" {
				t.Errorf("economics (-want +got):\n%s", diff)
			}
			var wantWarnings []Issue
			if tc.warning != nil {
				wantWarnings = append(wantWarnings, *tc.warning)
			}
			if diff := cmp.Diff(wantWarnings, got.Warnings, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckWarningsAndBody(t *testing.T) {
	tests := []struct {
		name    string
		request string
		schema  string
		valid   bool
		errors  []Issue
		warns   []Issue
	}{
		{
			name:    "absent body with a type keyword",
			request: `{"method":"POST","url":"https://a.example/x"}`,
			schema:  `{"type":"object"}`,
			errors:  []Issue{{Path: "/request/body", Code: IssueRequired, Message: "the request has no body; the schema's type keyword requires one"}},
		},
		{
			name:    "absent body without a type keyword",
			request: `{"method":"POST","url":"https://a.example/x"}`,
			schema:  `{"properties":{"a":{"type":"string"}}}`,
			valid:   true,
			warns:   []Issue{{Path: "/request/body", Code: IssueBodyAbsent, Message: "the request has no body; nothing was validated"}},
		},
		{
			name:    "null body is a body",
			request: `{"method":"POST","url":"https://a.example/x","body":null}`,
			schema:  `{"type":"null"}`,
			valid:   true,
		},
		{
			name:    "credentials and GET with a body",
			request: `{"method":"get","url":"http://a.example/x","headers":{"X-Api-Key":"k","Accept":"application/json","Cookie":"c"},"body":{}}`,
			schema:  `{}`,
			valid:   true,
			warns: []Issue{
				{Path: "/request/headers/Cookie", Code: IssueSensitiveHeader, Message: `header "Cookie" carries credentials; do not send credentials to preflight`},
				{Path: "/request/headers/X-Api-Key", Code: IssueSensitiveHeader, Message: `header "X-Api-Key" carries credentials; do not send credentials to preflight`},
				{Path: "/request/method", Code: IssueBodyWithGet, Message: "GET request carries a body; many servers ignore or reject it"},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := checkBytes([]byte(`{"request":` + tc.request + `,"schema":` + tc.schema + `}`))
			if err != nil {
				t.Fatal(err)
			}
			if got.Valid != tc.valid {
				t.Errorf("valid = %v, want %v", got.Valid, tc.valid)
			}
			if diff := cmp.Diff(tc.errors, got.Errors, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.warns, got.Warnings, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckTruncatesErrors(t *testing.T) {
	items := strings.TrimSuffix(strings.Repeat(`"x",`, 150), ",")
	got, err := checkBytes([]byte(`{"request":{"method":"POST","url":"https://a.example/","body":[` + items +
		`]},"schema":{"items":{"type":"integer"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Errors) != 100 {
		t.Errorf("got %d errors, want 100", len(got.Errors))
	}
	want := []Issue{{Path: "", Code: IssueErrorsTruncated, Message: "more than 100 validation errors; only the first 100 are listed"}}
	if diff := cmp.Diff(want, got.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

func TestRequestHashNormalization(t *testing.T) {
	hash := func(request, schema string) string {
		t.Helper()
		res, err := checkBytes([]byte(`{"request":` + request + `,"schema":` + schema + `,"economics":{"downstreamCostUsd":1,"billsOnInvalidRequest":false,"retryCostUsd":0}}`))
		if err != nil {
			t.Fatal(err)
		}
		return res.RequestHash
	}
	base := hash(`{"method":"POST","url":"https://a.example/x","headers":{"Content-Type":"application/json"},"body":{"a":1,"b":[1,2]}}`, `{"type":"object"}`)
	for name, h := range map[string]string{
		"method case":     hash(`{"method":"post","url":"https://a.example/x","headers":{"Content-Type":"application/json"},"body":{"a":1,"b":[1,2]}}`, `{"type":"object"}`),
		"header case":     hash(`{"method":"POST","url":"https://a.example/x","headers":{"content-type":"application/json"},"body":{"a":1,"b":[1,2]}}`, `{"type":"object"}`),
		"member order":    hash(`{"body":{"b":[1,2],"a":1.0},"url":"https://a.example/x","method":"POST","headers":{"CONTENT-TYPE":"application/json"}}`, `{"type":"object"}`),
		"economics apart": hash(`{"method":"POST","url":"https://a.example/x","headers":{"Content-Type":"application/json"},"body":{"a":1,"b":[1,2]}}`, ` { "type" : "object" } `),
	} {
		if h != base {
			t.Errorf("%s changed the requestHash", name)
		}
	}
	for name, h := range map[string]string{
		"array order": hash(`{"method":"POST","url":"https://a.example/x","headers":{"Content-Type":"application/json"},"body":{"a":1,"b":[2,1]}}`, `{"type":"object"}`),
		"url":         hash(`{"method":"POST","url":"https://a.example/X","headers":{"Content-Type":"application/json"},"body":{"a":1,"b":[1,2]}}`, `{"type":"object"}`),
		"schema":      hash(`{"method":"POST","url":"https://a.example/x","headers":{"Content-Type":"application/json"},"body":{"a":1,"b":[1,2]}}`, `{"type":"object","required":[]}`),
		"no body":     hash(`{"method":"POST","url":"https://a.example/x","headers":{"Content-Type":"application/json"}}`, `{"type":"object"}`),
	} {
		if h == base {
			t.Errorf("%s did not change the requestHash", name)
		}
	}
}

func TestDecodeCheckErrors(t *testing.T) {
	big := `{"request":{"method":"POST","url":"https://a.example/"},"schema":{"enum":["` + strings.Repeat("a", 32768) + `"]}}`
	tests := []struct {
		name string
		body string
		code ErrorCode
		want []Issue
	}{
		{"empty", ``, ErrorInvalidJSON, []Issue{{Path: "", Code: IssueInvalidJSON, Message: "expected a JSON value, found end of input"}}},
		{"invalid UTF-8", "{\"request\":\"\xff\"}", ErrorInvalidJSON, []Issue{{Path: "/request", Code: IssueInvalidUTF8, Message: "string contains invalid UTF-8"}}},
		{"lone surrogate", `{"request":"\ud800"}`, ErrorInvalidJSON, []Issue{{Path: "/request", Code: IssueInvalidUTF8, Message: "string contains a lone UTF-16 surrogate escape"}}},
		{"duplicate key", `{"schema":{},"schema":{}}`, ErrorInvalidJSON, []Issue{{Path: "/schema", Code: IssueDuplicateKey, Message: `duplicate member name "schema"`}}},
		{"schema too large", big, ErrorSchemaTooLarge, []Issue{{Path: "/schema", Code: IssueSchemaTooLarge, Message: "expected a schema of at most 32768 bytes, found 32781"}}},
		{"schema not an object", `{"request":{"method":"POST","url":"https://a.example/"},"schema":true}`, ErrorInvalidSchema, nil},
		{"envelope rules", `{"request":{"method":"PO ST","url":"mailto:a@b","headers":{"A":1,"b":"x","B":"y"},"query":[],"extra":1},"schema":{},
			"economics":{"downstreamCostUsd":"1","billsOnInvalidRequest":1,"retryCostUsd":-0.5,"priorInvalidProbability":1.5,"tip":0}}`,
			ErrorInvalidRequest, []Issue{
				{Path: "/request/extra", Code: IssueUnknownField, Message: `unknown member "extra"; expected one of "method", "url", "headers", "query", "body"`},
				{Path: "/request/method", Code: IssueInvalidMethod, Message: `expected an HTTP method token such as "POST", found "PO ST"`},
				{Path: "/request/url", Code: IssueInvalidURL, Message: `expected an absolute URL with scheme http or https, found "mailto:a@b"`},
				{Path: "/request/headers/A", Code: IssueType, Message: "expected a string header value, found integer"},
				{Path: "/request/headers/B", Code: IssueDuplicateHeader, Message: `header "B" repeats "b" (header names are case-insensitive)`},
				{Path: "/request/query", Code: IssueType, Message: "expected an object, found array"},
				{Path: "/economics/tip", Code: IssueUnknownField, Message: `unknown member "tip"; expected one of "downstreamCostUsd", "billsOnInvalidRequest", "retryCostUsd", "priorInvalidProbability", "preflightPriceUsd", "budgetRemainingUsd"`},
				{Path: "/economics/downstreamCostUsd", Code: IssueType, Message: "expected a number, found string"},
				{Path: "/economics/billsOnInvalidRequest", Code: IssueType, Message: "expected a boolean, found integer"},
				{Path: "/economics/retryCostUsd", Code: IssueMinimum, Message: "expected a number >= 0, found -0.5"},
				{Path: "/economics/priorInvalidProbability", Code: IssueMaximum, Message: "expected a number <= 1, found 1.5"},
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := checkBytes([]byte(tc.body))
			e, ok := err.(*Error)
			if !ok {
				t.Fatalf("got error %v, want *Error", err)
			}
			if e.Code != tc.code {
				t.Errorf("code = %s, want %s (%v)", e.Code, tc.code, e)
			}
			if tc.want != nil {
				if diff := cmp.Diff(tc.want, e.Details); diff != "" {
					t.Errorf("details (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestCheckBeyondDoubleRange: a number RFC 8785 cannot represent is still
// validated exactly and hashed as it was written.
func TestCheckBeyondDoubleRange(t *testing.T) {
	res, err := checkBytes([]byte(`{"request":{"method":"POST","url":"https://a.example/","body":{"n":-1e400}},
		"schema":{"properties":{"n":{"minimum":-1e399}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Issue{{Path: "/request/body/n", Code: IssueMinimum, Message: "expected at least -1e399, found -1e400"}}
	if diff := cmp.Diff(want, res.Errors); diff != "" || !hex64.MatchString(res.RequestHash) {
		t.Errorf("errors (-want +got):\n%s\nhash %q", diff, res.RequestHash)
	}
}

// TestCheckInProcess checks that a request built in Go gets the same result
// as the same request decoded from bytes.
func TestCheckInProcess(t *testing.T) {
	data := []byte(`{"request":{"method":"POST","url":"https://a.example/","headers":{"Accept":"*/*"},"body":{"qty":0.1}},
		"schema":{"properties":{"qty":{"minimum":0.2}}},"economics":{"downstreamCostUsd":0.1,"billsOnInvalidRequest":true,"retryCostUsd":0.2}}`)
	fromBytes, err := checkBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	req := &CheckRequest{
		Request: ProposedRequest{Method: "POST", URL: "https://a.example/", Headers: map[string]string{"Accept": "*/*"},
			Body: json.RawMessage(`{"qty":0.1}`)},
		Schema:    json.RawMessage(`{"properties":{"qty":{"minimum":0.2}}}`),
		Economics: &CheckEconomics{DownstreamCostUSD: "0.1", BillsOnInvalidRequest: true, RetryCostUSD: "0.2"},
	}
	inProcess, err := Check(req)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fromBytes, inProcess); diff != "" {
		t.Errorf("in-process result differs from decoded (-bytes +in-process):\n%s", diff)
	}
	// Editing a decoded request is noticed.
	decoded, _ := DecodeCheckRequest(data)
	decoded.Request.Body = json.RawMessage(`{"qty":0.3}`)
	edited, err := Check(decoded)
	if err != nil {
		t.Fatal(err)
	}
	if !edited.Valid {
		t.Errorf("edited body was not re-read: %+v", edited.Errors)
	}
}

func TestErrorEnvelope(t *testing.T) {
	e := &Error{Code: ErrorInvalidRequest, Message: "m", Details: []Issue{{Path: "/a", Code: IssueType, Message: "x"}}}
	got, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"error":{"code":"invalid_request","message":"m","details":[{"path":"/a","code":"type","message":"x"}]}}`
	if string(got) != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
	got, _ = json.Marshal(&Error{Code: ErrorInvalidJSON, Message: "no route"})
	if want := `{"error":{"code":"invalid_json","message":"no route"}}`; string(got) != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
	if s := e.Error(); s != "invalid_request: m (/a: x)" {
		t.Errorf("Error() = %q", s)
	}
}

func TestIsSensitiveHeader(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"Authorization", true},
		{"X-GOOG-API-KEY", true},
		{"X-Session-Id", true},
		{"Content-Type", false},
		{"Accept", false},
		{"X-To\u212aen", true}, // the Kelvin sign lowers to an ASCII k
		{"X-Ünicode", false},
		{"Authorization ", true}, // white space around a name hides nothing
		{"Ocp-Apim-Subscription-Key", true},
		{"PAYMENT-SIGNATURE", true},
		{"X-Hub-Signature-256", true},
		{"X-Amz-Access-Key", true},
		{strings.Repeat("x", 80) + "-Secret", true}, // longer than the stack buffer
		{strings.Repeat("x", 80), false},
	}
	for _, tt := range tests {
		if got := isSensitiveHeader(tt.name); got != tt.want {
			t.Errorf("isSensitiveHeader(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestDecoderAmount covers the bounds and precision rule of numeric context
// values, on both sides of every edge.
func TestDecoderAmount(t *testing.T) {
	tests := []struct {
		text, max string
		want      IssueCode // "" for accepted
	}{
		{"0", maxNumeric, ""},
		{"-0", maxNumeric, ""},
		{"-0.0001", maxNumeric, IssueMinimum},
		{"-1e-9", maxNumeric, IssueMinimum},
		{"1000000000", maxNumeric, ""},
		{"1e9", maxNumeric, ""},
		{"1000000000.0000001", maxNumeric, IssueMaximum},
		{"1.5e9", maxNumeric, IssueMaximum},
		{"1", "1", ""},
		{"1.000", "1", ""},
		{"1.01", "1", IssueMaximum},
		{"1e-400", maxNumeric, ""},
		{"1e-401", maxNumeric, IssuePrecision},
		{"0." + strings.Repeat("1", 400), maxNumeric, ""},
		{"0." + strings.Repeat("1", 401), maxNumeric, IssuePrecision},
		{"0." + strings.Repeat("1", 400) + "0", maxNumeric, ""},
		{"12.5", "20", ""},
		{"20.5", "20", IssueMaximum},
	}
	for _, tt := range tests {
		v, err := strictjson.Parse([]byte(tt.text), strictjson.Limits{})
		if err != nil {
			t.Fatalf("parse %s: %v", tt.text, err)
		}
		var d decoder
		_, ok := d.amount(v, memberPath{"", "x"}, tt.max)
		var got IssueCode
		if len(d.issues) > 0 {
			got = d.issues[0].Code
		}
		if got != tt.want || ok != (tt.want == "") {
			t.Errorf("amount(%.40s, max %s) = %v with %q, want %q", tt.text, tt.max, ok, got, tt.want)
		}
	}
}

func TestPlainHTTPURL(t *testing.T) {
	tests := []struct {
		url  string
		want bool
	}{
		{"https://api.example.com/v1/items?x=1#top", true},
		{"http://localhost:8080", true},
		{"https://a:/", false}, // empty port: left to url.Parse
		{"https://a:65535/", true},
		{"https://a:65536/", false},        // out of range: left to url.Parse and refused there
		{"https://user@a.example/", false}, // user info
		{"https://[::1]/", false},          // IPv6 literal
		{"https://a.example/%20", false},   // escapes
		{"HTTPS://a.example/", false},      // upper-case scheme
		{"ftp://a.example/", false},
		{"https://", false},
		{"https://a.example/ b", false},
	}
	for _, tt := range tests {
		if got := plainHTTPURL(tt.url); got != tt.want {
			t.Errorf("plainHTTPURL(%q) = %v, want %v", tt.url, got, tt.want)
		}
		if tt.want && parseAbsoluteURL(tt.url) != "" {
			t.Errorf("%q: url.Parse test rejects a URL the fast path accepts", tt.url)
		}
	}
}

// TestURLPort: url.Parse takes any digit string as a port, so
// https://a.example:99999/ used to pass both URL rules (Check's
// request.url and the browse payload's url). A port must be 0 to 65535;
// leading zeros are allowed, as in WHATWG URL, and so is an empty port
// after the colon (RFC 3986), which the rules already accepted.
func TestURLPort(t *testing.T) {
	tests := []struct {
		url     string
		invalid bool
	}{
		{"https://a.example:99999/", true},
		{"https://a.example:65536/", true},
		{"http://a.example:4294967376/", true}, // 80 modulo 2^32
		{"https://a.example:099999/", true},
		{"https://[::1]:70000/", true},
		{"https://user@a.example:123456/", true},
		{"https://a.example:65535/", false},
		{"https://a.example:0/", false},
		{"http://a.example:00080/x", false},
		{"http://a.example:0000000000000000000000080", false},
		{"https://a.example:/", false},
		{"https://[::1]:8443/", false},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			msg := `expected an absolute http(s) URL with a port from 0 to 65535, found ` + strconv.Quote(tt.url)
			var wantCheck *Error
			if tt.invalid {
				wantCheck = &Error{Code: ErrorInvalidRequest, Message: "the request breaks an input rule",
					Details: []Issue{{Path: "/request/url", Code: IssueInvalidURL, Message: msg}}}
			}
			body, _ := json.Marshal(map[string]any{"request": map[string]any{"method": "GET", "url": tt.url}, "schema": map[string]any{}})
			_, err := DecodeCheckRequest(body)
			got, _ := err.(*Error)
			if err != nil && got == nil {
				t.Fatalf("got %v, want *Error", err)
			}
			if diff := cmp.Diff(wantCheck, got); diff != "" {
				t.Errorf("request.url (-want +got):\n%s", diff)
			}

			r := baseCall()
			r.Tool.Provider, r.Tool.Operation = "browse", "fetch"
			r.Tool.Request, _ = json.Marshal(map[string]string{"url": tt.url})
			d, err := Decide(r)
			if err != nil {
				t.Fatal(err)
			}
			wantVerdict, wantIssues := VerdictAllow, []Issue{}
			if tt.invalid {
				wantVerdict, wantIssues = VerdictBlock, []Issue{{Path: "/tool/request/url", Code: IssueAbsoluteURL, Message: msg}}
			}
			if d.Verdict != wantVerdict {
				t.Errorf("browse url: verdict %s, want %s", d.Verdict, wantVerdict)
			}
			if diff := cmp.Diff(wantIssues, d.Issues); diff != "" {
				t.Errorf("browse url issues (-want +got):\n%s", diff)
			}
		})
	}
}
