package server

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentpreflight/preflight/server/internal/x402"
)

// TestFacilitatorOutageUnderLoad: payment is configured but the facilitator
// is down (a closed loopback port). Under concurrent load, a paid request
// with a well-formed payment answers 503 payment_unavailable, one without
// payment still gets its 402 challenge and an invalid one its free 400,
// while /check-request, /health and both MCP tools answer 200 with the same
// bytes as when payment works. Every response is checked.
func TestFacilitatorOutageUnderLoad(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()

	cfg := paidConfig(down, nil)
	ts := httptest.NewServer(New(cfg))
	defer ts.Close()
	ts.Client().Transport.(*http.Transport).MaxIdleConnsPerHost = 64

	// The answers the free routes give with no payment configured at all.
	free := httptest.NewServer(New(testConfig))
	wantCheck := fetch(t, free, "POST", "/check-request", checkValid, "")
	wantMCP := fetch(t, free, "POST", "/mcp", mcpMessage("preflight_tool_call", toolAllow), "")
	free.Close()

	type expect struct {
		name         string
		method, path string
		body, sig    string
		status       int
		code         string // error.code of an error answer
		same         []byte // the exact body, when set
	}
	const workers, rounds = 16, 20
	var mu sync.Mutex
	var failures []string
	counts := map[string]int{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				sig := paymentSignature(cfg.Payment, fmt.Sprintf("ok-%d-%d", w, i), "")
				for _, e := range []expect{
					{"paid, facilitator down", "POST", "/v0.2/preflight/tool-call", toolAllow, sig, 503, "payment_unavailable", nil},
					{"paid, no payment", "POST", "/v0.2/preflight/tool-call", toolAllow, "", 402, "payment_required", nil},
					{"paid, invalid input", "POST", "/v0.2/preflight/tool-call", `{}`, sig, 400, "invalid_request", nil},
					{"check", "POST", "/check-request", checkValid, "", 200, "", wantCheck.body},
					{"health", "GET", "/health", "", "", 200, "", []byte(`{"status":"ok"}`)},
					{"mcp preflight_tool_call", "POST", "/mcp", mcpMessage("preflight_tool_call", toolAllow), "", 200, "", wantMCP.body},
					{"mcp check_request", "POST", "/mcp", mcpMessage("check_request", checkValid), "", 200, "", nil},
				} {
					got, err := fetchErr(ts, e.method, e.path, e.body, e.sig)
					problem := ""
					switch {
					case err != nil:
						problem = "connection error: " + err.Error()
					case got.status != e.status:
						problem = fmt.Sprintf("status %d, want %d: %.200s", got.status, e.status, got.body)
					case e.code != "" && envelopeCode(got.body) != e.code:
						problem = fmt.Sprintf("error.code %q, want %q", envelopeCode(got.body), e.code)
					case e.same != nil && !bytes.Equal(got.body, e.same):
						problem = fmt.Sprintf("body differs from the unpaid server's:\n%s\n%s", got.body, e.same)
					case e.path == "/mcp" && bytes.Contains(got.body, []byte(`"isError":true`)):
						problem = "MCP tool result is an error: " + string(got.body)
					}
					mu.Lock()
					counts[e.name]++
					if problem != "" {
						failures = append(failures, e.name+": "+problem)
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for i, f := range failures {
		if i == 10 {
			t.Errorf("... and %d more", len(failures)-10)
			break
		}
		t.Error(f)
	}
	t.Logf("%d workers; responses per kind: %v", workers, counts)
}

// answer is a response with its body read.
type answer struct {
	status int
	body   []byte
}

func mcpMessage(tool, args string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
}

// fetchErr sends one request to ts; it is safe to call from any goroutine.
func fetchErr(ts *httptest.Server, method, path, body, sig string) (answer, error) {
	req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sig != "" {
		req.Header.Set(x402.HeaderPaymentSignature, sig)
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, b}, err
}

func fetch(t *testing.T, ts *httptest.Server, method, path, body, sig string) answer {
	t.Helper()
	a, err := fetchErr(ts, method, path, body, sig)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
