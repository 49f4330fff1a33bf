package server

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// Bodies shared by the route tests.
const (
	checkValid   = `{"request":{"method":"POST","url":"https://api.example.com/v1/orders","headers":{"Content-Type":"application/json"},"body":{"sku":"A-1","qty":2}},"schema":{"type":"object","required":["sku","qty"],"properties":{"sku":{"type":"string","minLength":1},"qty":{"type":"integer","minimum":1}},"additionalProperties":false}}`
	checkInvalid = `{"request":{"method":"POST","url":"https://api.example.com/v1/orders","body":{"sku":"","qty":0,"note":"x"}},"schema":{"type":"object","required":["sku","qty"],"properties":{"sku":{"type":"string","minLength":1},"qty":{"type":"integer","minimum":1}},"additionalProperties":false}}`
	checkEcon    = `{"request":{"method":"POST","url":"https://api.example.com/v1/orders","body":{"qty":0}},"schema":{"type":"object","properties":{"qty":{"type":"integer","minimum":1}}},"economics":{"downstreamCostUsd":0.05,"billsOnInvalidRequest":true,"retryCostUsd":0.01}}`
	toolAllow    = `{"runId":"run-1","stepId":"step-1","tool":{"provider":"search","operation":"web_search","request":{"query":"preflight checks for agents","max_results":5},"estimatedExternalCostUsd":0.01},"budget":{"remainingUsd":1}}`
	toolBlock    = `{"runId":"run-1","stepId":"step-2","tool":{"provider":"browse","operation":"fetch","request":{"url":"not a url"},"estimatedExternalCostUsd":0.002},"budget":{"remainingUsd":1}}`
	toolDefer    = `{"runId":"run-1","stepId":"step-3","tool":{"provider":"search","operation":"search:web_search","request":{"query":"q"},"estimatedExternalCostUsd":0.2},"budget":{"remainingUsd":0.3,"reservedUsd":0.2}}`
	toolAdvise   = `{"runId":"run-1","stepId":"step-4","tool":{"provider":"maps","operation":"geocode","request":{"q":"Paris"},"estimatedExternalCostUsd":0.005},"budget":{"remainingUsd":1}}`
)

// toolReuse is a reuse proposal: its history entry carries the fingerprint
// the service returns for toolAllow's tool (filled in by the test).
const toolReuseTemplate = `{"runId":"run-1","stepId":"step-5","tool":{"provider":"search","operation":"web_search","request":{"query":"preflight checks for agents","max_results":5},"estimatedExternalCostUsd":0.01},"budget":{"remainingUsd":1},"task":{"goalHash":"g1"},"capabilities":{"canReusePriorResult":true,"canReduceScope":false},"freshnessTtlSeconds":600,"history":[{"toolCallId":"call-7","fingerprint":"%s","outcome":"success","resultReference":"mem://results/7","ageSeconds":600,"goalHash":"g1"}]}`

// nested returns a tool-call body whose tool.request nests depth levels
// below the top-level object in total.
func nested(depth int) string {
	inner := `"x"`
	for i := 0; i < depth-3; i++ {
		inner = `[` + inner + `]`
	}
	return `{"runId":"r","stepId":"s","tool":{"provider":"search","operation":"web_search","request":{"query":"q","deep":` + inner + `},"estimatedExternalCostUsd":0},"budget":{"remainingUsd":1}}`
}

// manyHistory returns a tool-call body with n history entries.
func manyHistory(n int) string {
	entries := make([]string, n)
	for i := range entries {
		entries[i] = fmt.Sprintf(`{"toolCallId":"c%d","fingerprint":"f","outcome":"success","ageSeconds":1}`, i)
	}
	return `{"runId":"r","stepId":"s","tool":{"provider":"search","operation":"web_search","request":{"query":"q"},"estimatedExternalCostUsd":0},"budget":{"remainingUsd":1},"history":[` + strings.Join(entries, ",") + `]}`
}

// routeCase is one request of the route table and the status and error code
// its answer must carry. Every case's whole answer is also compared with
// testdata/http/<name>.golden.
type routeCase struct {
	name    string
	method  string
	path    string
	body    string // "" sends no body
	headers []string
	status  int
	code    string // error.code of a non-200 answer
}

// routeCases covers every route and every row of the server's status
// table (payment rows are in paywall_test.go, size rows in body_test.go).
func routeCases() []routeCase {
	const check, tool, dump = "/check-request", "/v0.2/preflight/tool-call", "/v0.2/usage/dump"
	bigSchema := `{"request":{"method":"POST","url":"https://a.example/x","body":1},"schema":{"type":"number","enum":[` + strings.Repeat(`1,`, 17000) + `1]}}`
	return []routeCase{
		// 200: completed checks and decisions.
		{name: "check_valid", method: "POST", path: check, body: checkValid, status: 200},
		{name: "check_invalid_body", method: "POST", path: check, body: checkInvalid, status: 200},
		{name: "check_economics", method: "POST", path: check, body: checkEcon, status: 200},
		{name: "check_json_subtype", method: "POST", path: check, body: checkValid, headers: []string{"Content-Type: application/vnd.api+json; charset=utf-8"}, status: 200},
		{name: "check_json_charset", method: "POST", path: check, body: checkValid, headers: []string{"Content-Type: application/json; charset=utf-8"}, status: 200},
		{name: "tool_allow", method: "POST", path: tool, body: toolAllow, headers: []string{"Accept: application/json"}, status: 200},
		{name: "tool_block_invalid_payload", method: "POST", path: tool, body: toolBlock, status: 200},
		{name: "tool_defer_budget", method: "POST", path: tool, body: toolDefer, status: 200},
		{name: "tool_advise_unsupported", method: "POST", path: tool, body: toolAdvise, status: 200},
		{name: "tool_unknown_top_level_ignored", method: "POST", path: tool, body: strings.Replace(toolAllow, `{"runId"`, `{"extra":true,"runId"`, 1), status: 200},
		{name: "health", method: "GET", path: "/health", status: 200},

		// 400 invalid_json.
		{name: "check_empty_body", method: "POST", path: check, status: 400, code: "invalid_json"},
		{name: "check_trailing_data", method: "POST", path: check, body: checkValid + `{}`, status: 400, code: "invalid_json"},
		{name: "check_invalid_utf8", method: "POST", path: check, body: `{"request":{"method":"POST","url":"https://a.example/","body":"` + "\xff" + `"},"schema":{}}`, status: 400, code: "invalid_json"},
		{name: "check_duplicate_key", method: "POST", path: check, body: `{"schema":{},"schema":{},"request":{"method":"GET","url":"https://a.example/"}}`, status: 400, code: "invalid_json"},
		{name: "tool_empty_body", method: "POST", path: tool, status: 400, code: "invalid_json"},
		{name: "tool_truncated", method: "POST", path: tool, body: toolAllow[:40], status: 400, code: "invalid_json"},

		// 400 invalid_request.
		{name: "check_not_object", method: "POST", path: check, body: `[1,2]`, status: 400, code: "invalid_request"},
		{name: "check_missing_schema", method: "POST", path: check, body: `{"request":{"method":"POST","url":"https://a.example/"}}`, status: 400, code: "invalid_request"},
		{name: "check_unknown_field", method: "POST", path: check, body: `{"request":{"method":"POST","url":"ftp://a.example/","extra":1},"schema":{},"more":true}`, status: 400, code: "invalid_request"},
		{name: "tool_not_object", method: "POST", path: tool, body: `"hello"`, status: 400, code: "invalid_request"},
		{name: "tool_missing_fields", method: "POST", path: tool, body: `{"runId":"","tool":{"provider":"search"}}`, status: 400, code: "invalid_request"},
		{name: "tool_negative_budget", method: "POST", path: tool, body: strings.Replace(toolAllow, `"remainingUsd":1`, `"remainingUsd":-1`, 1), status: 400, code: "invalid_request"},

		// 400 schema codes.
		{name: "check_unsupported_keyword", method: "POST", path: check, body: `{"request":{"method":"POST","url":"https://a.example/","body":"a@b"},"schema":{"type":"string","format":"email"}}`, status: 400, code: "unsupported_schema_keyword"},
		{name: "check_unsupported_pattern", method: "POST", path: check, body: `{"request":{"method":"POST","url":"https://a.example/","body":"a"},"schema":{"type":"string","pattern":"(?=a)"}}`, status: 400, code: "unsupported_pattern"},
		{name: "check_invalid_schema", method: "POST", path: check, body: `{"request":{"method":"POST","url":"https://a.example/","body":"a"},"schema":{"type":"string","minLength":-1}}`, status: 400, code: "invalid_schema"},
		{name: "check_schema_too_large", method: "POST", path: check, body: bigSchema, status: 400, code: "schema_too_large"},

		// 400 limit_exceeded.
		{name: "tool_history_101", method: "POST", path: tool, body: manyHistory(101), status: 400, code: "limit_exceeded"},
		{name: "tool_depth_17", method: "POST", path: tool, body: nested(17), status: 400, code: "limit_exceeded"},

		// 400 unsupported_media_type.
		{name: "check_text_plain", method: "POST", path: check, body: checkValid, headers: []string{"Content-Type: text/plain"}, status: 400, code: "unsupported_media_type"},
		{name: "tool_form", method: "POST", path: tool, body: "a=b", headers: []string{"Content-Type: application/x-www-form-urlencoded"}, status: 400, code: "unsupported_media_type"},
		{name: "tool_bad_media_type", method: "POST", path: tool, body: toolAllow, headers: []string{"Content-Type: ;;"}, status: 400, code: "unsupported_media_type"},

		// 400 unsupported_content_encoding: a coded body is refused, not
		// parsed as JSON.
		{name: "check_gzip", method: "POST", path: check, body: "\x1f\x8b\x08\x00", headers: []string{"Content-Encoding: gzip"}, status: 400, code: "unsupported_content_encoding"},
		{name: "tool_deflate", method: "POST", path: tool, body: toolAllow, headers: []string{"Content-Encoding: deflate"}, status: 400, code: "unsupported_content_encoding"},
		{name: "tool_identity_then_br", method: "POST", path: tool, body: toolAllow, headers: []string{"Content-Encoding: identity, br"}, status: 400, code: "unsupported_content_encoding"},
		{name: "check_identity", method: "POST", path: check, body: checkValid, headers: []string{"Content-Encoding: Identity"}, status: 200},

		// 404 and 405.
		{name: "unknown_path", method: "GET", path: "/nope", status: 404, code: "not_found"},
		{name: "unknown_path_post", method: "POST", path: "/check-request/", body: checkValid, status: 404, code: "not_found"},
		{name: "check_get", method: "GET", path: check, status: 405, code: "method_not_allowed"},
		{name: "tool_put", method: "PUT", path: tool, body: toolAllow, status: 405, code: "method_not_allowed"},
		{name: "health_post", method: "POST", path: "/health", body: `{}`, status: 405, code: "method_not_allowed"},
		{name: "docs_delete", method: "DELETE", path: "/docs", status: 405, code: "method_not_allowed"},

		// 503 on the reserved route, whatever the body.
		{name: "usage_dump", method: "POST", path: dump, body: `{}`, status: 503, code: "capability_unavailable"},
		{name: "usage_dump_garbage", method: "POST", path: dump, body: "\x00not json", headers: []string{"Content-Type: text/plain"}, status: 503, code: "capability_unavailable"},
		{name: "usage_dump_get", method: "GET", path: dump, status: 405, code: "method_not_allowed"},
	}
}

// testConfig is the configuration of the golden tests: fixed addresses so
// the answers do not depend on the test server's port.
var testConfig = Config{BaseURL: "https://api.example.test", SiteURL: "https://example.test"}

func TestRoutes(t *testing.T) {
	c := newAPIClient(t, New(testConfig))
	for _, tc := range routeCases() {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			var body []byte
			if tc.body != "" {
				body = []byte(tc.body)
			}
			x := c.do(tc.method, tc.path, body, tc.headers...)
			if x.Status != tc.status {
				t.Errorf("status %d, want %d; body %s", x.Status, tc.status, x.Body)
			}
			if ct := x.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			if tc.code != "" && !bytes.Contains(x.Body, []byte(`{"error":{"code":"`+tc.code+`"`)) {
				t.Errorf("body %s, want error code %q", x.Body, tc.code)
			}
			if tc.status == http.StatusMethodNotAllowed && x.Header.Get("Allow") == "" {
				t.Error("405 without an Allow header")
			}
			checkGolden(t, tc.name, x.render())

			// The same request again gives the same bytes.
			again := c.do(tc.method, tc.path, body, tc.headers...)
			if !bytes.Equal(again.Body, x.Body) || again.Status != x.Status {
				t.Errorf("second answer differs:\nfirst  %d %s\nsecond %d %s", x.Status, x.Body, again.Status, again.Body)
			}
		})
	}
}

// TestReuseRoundTrip records the fingerprint of a real allow decision in
// history, as a caller would, and gets a reuse decision for the same call.
func TestReuseRoundTrip(t *testing.T) {
	c := newAPIClient(t, New(testConfig))
	first := c.do("POST", "/v0.2/preflight/tool-call", []byte(toolAllow))
	const marker = `"requestFingerprint":"`
	i := bytes.Index(first.Body, []byte(marker))
	if first.Status != 200 || i < 0 {
		t.Fatalf("allow answer %d %s", first.Status, first.Body)
	}
	fp := string(first.Body[i+len(marker) : i+len(marker)+64])
	x := c.do("POST", "/v0.2/preflight/tool-call", []byte(fmt.Sprintf(toolReuseTemplate, fp)))
	if x.Status != 200 || !bytes.Contains(x.Body, []byte(`"decision":"reuse"`)) {
		t.Errorf("reuse answer %d %s", x.Status, x.Body)
	}
	checkGolden(t, "tool_reuse", x.render())
}

// TestHead checks that GET routes answer HEAD with the GET headers and no
// body.
func TestHead(t *testing.T) {
	c := newAPIClient(t, New(testConfig))
	for _, path := range []string{"/health", "/openapi.json", "/docs", "/llms.txt"} {
		x := c.do("HEAD", path, nil)
		if x.Status != 200 || len(x.Body) != 0 || x.Header.Get("Content-Type") == "" {
			t.Errorf("HEAD %s: %d, %d body bytes, Content-Type %q", path, x.Status, len(x.Body), x.Header.Get("Content-Type"))
		}
	}
}
