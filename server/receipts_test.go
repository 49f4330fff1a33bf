package server

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/receipt"
	"github.com/agentpreflight/preflight/server/internal/x402"
	"github.com/agentpreflight/preflight/server/internal/x402/x402test"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// testReceiptSigner signs with a key derived from name, with one earlier
// key published beside it.
func testReceiptSigner(t testing.TB, name string) *receipt.Signer {
	t.Helper()
	key := func(n string) ed25519.PrivateKey {
		seed := sha256.Sum256([]byte(n))
		return ed25519.NewKeyFromSeed(seed[:])
	}
	s, err := receipt.NewSigner(key(name), key("earlier "+name).Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// serverKeys fetches the key set the server publishes, as an auditor would.
func serverKeys(t *testing.T, c *apiClient) receipt.Keys {
	t.Helper()
	x := c.do("GET", pathReceiptKeys, nil)
	if x.Status != 200 || x.Header.Get("Content-Type") != "application/jwk-set+json" {
		t.Fatalf("GET %s: %d %s %s", pathReceiptKeys, x.Status, x.Header.Get("Content-Type"), x.Body)
	}
	keys, err := receipt.ParseKeys(x.Body)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 {
		t.Errorf("the key set lists %d keys, want the signing key and the earlier one", len(keys))
	}
	return keys
}

// verifyHeader reads the receipt header of x and verifies it against the
// request, x's body and keys, with prev as the chain's expected link.
func verifyHeader(t *testing.T, request string, x exchange, keys receipt.Keys, prev string) receipt.Receipt {
	t.Helper()
	rc, err := receipt.Parse([]byte(x.Header.Get(receipt.Header)))
	if err != nil {
		t.Fatalf("%s header %q: %v", receipt.Header, x.Header.Get(receipt.Header), err)
	}
	v, err := receipt.Verify([]byte(request), x.Body, rc, keys, &receipt.VerifyOptions{Prev: prev})
	if err != nil {
		t.Fatal(err)
	}
	if !v.OK() || rc.Prev != prev {
		t.Errorf("receipt %s (prev %q, want %q) does not verify: %+v", rc.Marshal(), rc.Prev, prev, v.Findings)
	}
	return rc
}

// TestReceiptsHTTP: with a signing key, each 200 of both routes carries a
// receipt that verifies against the published keys and recomputes; a chain
// link sent in Preflight-Receipt-Prev is signed; the same request gives the
// same receipt bytes; errors carry no receipt and a malformed link is a
// 400.
func TestReceiptsHTTP(t *testing.T) {
	cfg := testConfig
	cfg.Receipts = testReceiptSigner(t, "server")
	c := newAPIClient(t, New(cfg))
	keys := serverKeys(t, c)

	check := c.do("POST", "/check-request", []byte(checkValid))
	first := verifyHeader(t, checkValid, check, keys, "")
	decision := c.do("POST", "/v0.2/preflight/tool-call", []byte(toolAllow), receipt.PrevHeader+": "+first.Hash())
	second := verifyHeader(t, toolAllow, decision, keys, first.Hash())
	if second.Kind() != receipt.KindDecision || first.Kind() != receipt.KindCheck {
		t.Errorf("kinds %s, %s; want check, decision", first.Kind(), second.Kind())
	}
	again := c.do("POST", "/v0.2/preflight/tool-call", []byte(toolAllow), receipt.PrevHeader+": "+first.Hash())
	if got, want := again.Header.Get(receipt.Header), decision.Header.Get(receipt.Header); got != want {
		t.Errorf("the same request signed twice:\n%s\n%s", want, got)
	}

	for name, c := range map[string]struct {
		path, body string
		headers    []string
		status     int
	}{
		"invalid input":             {"/v0.2/preflight/tool-call", `{}`, nil, 400},
		"unsupported schema":        {"/check-request", `{"request":{"method":"GET","url":"https://x.example"},"schema":{"format":"date"}}`, nil, 400},
		"a link that is not a hash": {"/check-request", checkValid, []string{receipt.PrevHeader + ": " + strings.Repeat("A", 64)}, 400},
		"a short link":              {"/v0.2/preflight/tool-call", toolAllow, []string{receipt.PrevHeader + ": abc"}, 400},
	} {
		t.Run(name, func(t *testing.T) {
			x := newAPIClient(t, New(cfg)).do("POST", c.path, []byte(c.body), c.headers...)
			if x.Status != c.status || x.Header.Get(receipt.Header) != "" {
				t.Errorf("status %d with receipt %q; want %d and none: %s", x.Status, x.Header.Get(receipt.Header), c.status, x.Body)
			}
		})
	}
}

// TestReceiptsOff: without a signing key nothing is signed and the key
// document is a 404.
func TestReceiptsOff(t *testing.T) {
	c := newAPIClient(t, New(testConfig))
	if x := c.do("POST", "/v0.2/preflight/tool-call", []byte(toolAllow)); x.Status != 200 || x.Header.Get(receipt.Header) != "" {
		t.Errorf("status %d, receipt %q; want 200 and none", x.Status, x.Header.Get(receipt.Header))
	}
	if x := c.do("GET", pathReceiptKeys, nil); x.Status != 404 || !strings.Contains(string(x.Body), `"not_found"`) {
		t.Errorf("key document without a key: %d %s", x.Status, x.Body)
	}
}

// TestReceiptsPaid: on the paid route the receipt goes out with the
// settled decision only; a challenge, a refused settlement and a pending
// one carry none.
func TestReceiptsPaid(t *testing.T) {
	fac := x402test.New(t, "", "")
	cfg := paidConfig(fac.URL, nil)
	cfg.Receipts = testReceiptSigner(t, "paid")
	c := newAPIClient(t, New(cfg))
	keys := serverKeys(t, c)

	challenge := c.do("POST", "/v0.2/preflight/tool-call", []byte(toolAllow), "Accept: application/json")
	if challenge.Status != 402 || challenge.Header.Get(receipt.Header) != "" {
		t.Errorf("challenge: %d with receipt %q", challenge.Status, challenge.Header.Get(receipt.Header))
	}
	for i, script := range []string{"/fail200", "/pending"} {
		x := c.do("POST", "/v0.2/preflight/tool-call", []byte(toolAllow), x402.HeaderPaymentSignature+": "+paymentSignature(cfg.Payment, script+"-"+string(rune('a'+i)), ""))
		if x.Status == 200 || x.Header.Get(receipt.Header) != "" {
			t.Errorf("settlement %s: %d with receipt %q; want no decision and no receipt", script, x.Status, x.Header.Get(receipt.Header))
		}
	}
	paid := c.do("POST", "/v0.2/preflight/tool-call", []byte(toolAllow), x402.HeaderPaymentSignature+": "+paymentSignature(cfg.Payment, "0x"+strings.Repeat("ab", 32), ""))
	if paid.Status != 200 || paid.Header.Get(x402.HeaderPaymentResponse) == "" {
		t.Fatalf("settled: %d %s", paid.Status, paid.Body)
	}
	verifyHeader(t, toolAllow, paid, keys, "")
}

// TestReceiptsMCP: both MCP tools put the receipt in the result's _meta,
// over the bytes of structuredContent; a link in params._meta is signed;
// error results carry none, and a malformed link is an error result.
func TestReceiptsMCP(t *testing.T) {
	cfg := testConfig
	cfg.Receipts = testReceiptSigner(t, "mcp")
	ts := mcpTestServer(t, cfg)
	keys := cfg.Receipts.Keys()
	cs := mcpConnect(t, ts, "")
	call := func(tool, args string, meta mcp.Meta) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args), Meta: meta})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	verify := func(request string, res *mcp.CallToolResult, prev string) receipt.Receipt {
		t.Helper()
		raw, err := json.Marshal(res.Meta[receipt.MetaKey])
		if err != nil {
			t.Fatal(err)
		}
		rc, err := receipt.Parse(raw)
		if err != nil {
			t.Fatalf("_meta receipt %s: %v", raw, err)
		}
		body, _ := json.Marshal(res.StructuredContent)
		v, err := receipt.Verify([]byte(request), body, rc, keys, &receipt.VerifyOptions{Prev: prev})
		if err != nil {
			t.Fatal(err)
		}
		if !v.OK() {
			t.Errorf("receipt does not verify: %+v", v.Findings)
		}
		return rc
	}
	first := verify(checkValid, call(mcpToolCheckRequest, checkValid, nil), "")
	second := verify(toolAllow, call(mcpToolToolCall, toolAllow, mcp.Meta{receipt.PrevMetaKey: first.Hash()}), first.Hash())

	// The same decision over HTTP has the same receipt, byte for byte.
	req, _ := http.NewRequest("POST", ts.URL+"/v0.2/preflight/tool-call", strings.NewReader(toolAllow))
	req.Header.Set(receipt.PrevHeader, first.Hash())
	rec := httptest.NewRecorder()
	New(cfg).ServeHTTP(rec, req)
	if got := rec.Header().Get(receipt.Header); got != string(second.Marshal()) {
		t.Errorf("HTTP receipt %s, MCP receipt %s: one decision, two receipts", got, second.Marshal())
	}

	if res := call(mcpToolToolCall, `{}`, nil); !res.IsError || res.Meta[receipt.MetaKey] != nil {
		t.Errorf("an error result: isError %v, _meta %v", res.IsError, res.Meta)
	}
	if res := call(mcpToolToolCall, toolAllow, mcp.Meta{receipt.PrevMetaKey: 7}); !res.IsError || res.Meta[receipt.MetaKey] != nil {
		t.Errorf("a link that is not a hash: isError %v, _meta %v", res.IsError, res.Meta)
	}
}
