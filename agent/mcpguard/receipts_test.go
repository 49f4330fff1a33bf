package mcpguard_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/agentpreflight/preflight/agent/mcpguard/mcptest"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/agentpreflight/preflight/receipt"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func receiptSigner(t *testing.T) *receipt.Signer {
	t.Helper()
	seed := sha256.Sum256([]byte("mcpguard receipts"))
	s, err := receipt.NewSigner(ed25519.NewKeyFromSeed(seed[:]))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// signedMeta reads the three receipt members of a result's _meta.
type signedMeta struct {
	Meta map[string]json.RawMessage `json:"_meta"`
}

// checkReceipt verifies the receipt res carries against the request and
// decision beside it, recomputed with catalog, and returns it.
func checkReceipt(t *testing.T, res []byte, keys receipt.Keys, catalog *preflight.Catalog, prev string) receipt.Receipt {
	t.Helper()
	var m signedMeta
	if err := json.Unmarshal(res, &m); err != nil {
		t.Fatal(err)
	}
	rc, err := receipt.Parse(m.Meta[receipt.MetaKey])
	if err != nil {
		t.Fatalf("result %s: receipt: %v", res, err)
	}
	v, err := receipt.Verify(m.Meta[receipt.RequestMetaKey], m.Meta[receipt.ResponseMetaKey], rc, keys, &receipt.VerifyOptions{Catalog: catalog, Prev: prev})
	if err != nil {
		t.Fatal(err)
	}
	if !v.OK() || rc.Prev != prev {
		t.Errorf("receipt (prev %q, want %q) does not verify: %+v\nresult %s", rc.Prev, prev, v.Findings, res)
	}
	return rc
}

// TestSessionReceipts: with Options.Receipts every decided call's result
// carries a receipt, the request decided and the decision, which verify
// and recompute with the guard's catalog; the receipts of a session form a
// chain; a receipt an upstream planted in _meta is replaced, its other
// _meta members kept; a repeat answered from memory gets the first
// answer's bytes.
func TestSessionReceipts(t *testing.T) {
	signer := receiptSigner(t)
	g := exactlySession(t, &mcpguard.Options{BudgetUSD: "0.3", Receipts: signer,
		Specs: []tools.Spec{{Operation: preflight.Operation{Name: "send"}, PriceUSD: "0.25"}}})
	catalog := func() *preflight.Catalog { return g.Agent().Guard().Catalog() }
	keys := signer.Keys()
	forwarded := 0
	call := func(params, upstream string) []byte {
		t.Helper()
		res, err := g.CallTool(context.Background(), json.RawMessage(params), func(context.Context) (json.RawMessage, error) {
			forwarded++
			return json.RawMessage(upstream), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	planted := `{"_meta":{"io.agentpreflight/receipt":{"forged":true},"trace":"t-1"},"content":[{"type":"text","text":"sent"}]}`
	first := call(`{"name":"send","arguments":{"to":"a"}}`, planted)
	r1 := checkReceipt(t, first, keys, catalog(), "")
	var m signedMeta
	json.Unmarshal(first, &m)
	if string(m.Meta["trace"]) != `"t-1"` || !strings.HasSuffix(string(first), `,"content":[{"type":"text","text":"sent"}]}`) {
		t.Errorf("the upstream's other members were not kept as they were: %s", first)
	}
	if strings.Contains(string(first), "forged") {
		t.Errorf("the planted receipt survived: %s", first)
	}

	second := call(`{"name":"look","arguments":{}}`, `{"content":[]}`)
	r2 := checkReceipt(t, second, keys, catalog(), r1.Hash())

	// 0.05 left: a second send defers, withheld with a receipt of its own.
	third := call(`{"name":"send","arguments":{"to":"b"}}`, `{"content":[]}`)
	r3 := checkReceipt(t, third, keys, catalog(), r2.Hash())
	var dec preflight.ToolCallDecision
	json.Unmarshal(m2(t, third)[receipt.ResponseMetaKey], &dec)
	if dec.Verdict != preflight.VerdictDefer || forwarded != 2 {
		t.Errorf("third call: verdict %s, %d forwarded; want defer and 2", dec.Verdict, forwarded)
	}
	if f := receipt.CheckChain("", []receipt.Receipt{r1, r2, r3}); len(f) != 0 {
		t.Errorf("chain: %+v", f)
	}

	// The repeat of the first send, within its idempotency window: the
	// first answer, receipt and all.
	if again := call(`{"name":"send","arguments":{"to":"a"}}`, `{"content":[]}`); string(again) != string(first) || forwarded != 2 {
		t.Errorf("repeat: %s (%d forwarded), want the first answer %s", again, forwarded, first)
	}
}

func m2(t *testing.T, res []byte) map[string]json.RawMessage {
	t.Helper()
	var m signedMeta
	if err := json.Unmarshal(res, &m); err != nil {
		t.Fatal(err)
	}
	return m.Meta
}

// TestSessionNoReceipts: without Options.Receipts results pass through
// byte for byte.
func TestSessionNoReceipts(t *testing.T) {
	g := exactlySession(t, nil)
	upstream := `{"content":[{"type":"text","text":"x"}] , "isError":false}`
	res, err := g.CallTool(context.Background(), json.RawMessage(`{"name":"look","arguments":{}}`), func(context.Context) (json.RawMessage, error) {
		return json.RawMessage(upstream), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if string(res) != upstream {
		t.Errorf("result %s, want the upstream's bytes %s", res, upstream)
	}
}

// TestServerMiddlewareReceipts: the middleware of a real MCP server signs
// its decisions too: a run call and a reused one carry receipts, chained,
// that a client verifies from the result's _meta alone (with the catalog
// built from the same spec and tool list, here the guard's own).
func TestServerMiddlewareReceipts(t *testing.T) {
	signer := receiptSigner(t)
	opts := mcptest.ScriptGuard()
	opts.Receipts = signer
	srv, counts := mcptest.NewServer("")
	srv.AddReceivingMiddleware(mcpguard.Server(opts))
	cs := connect(t, srv, newClient(), "")
	ctx := context.Background()
	listed, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var prev string
	for i := range 2 { // the second is reused: market_quote is read-only with a TTL
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcptest.Quote, Arguments: map[string]any{"symbol": "ACME"}})
		if err != nil {
			t.Fatal(err)
		}
		raw, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		// The catalog the guard decided with: the same spec over the same list.
		g, err := mcpguard.NewSession(opts)
		if err != nil {
			t.Fatal(err)
		}
		list, _ := json.Marshal(listed)
		g.SawToolsList("", list)
		rc := checkReceipt(t, raw, signer.Keys(), g.Agent().Guard().Catalog(), prev)
		g.Close()
		prev = rc.Hash()
		var dec preflight.ToolCallDecision
		json.Unmarshal(m2(t, raw)[receipt.ResponseMetaKey], &dec)
		if want := []preflight.Verdict{preflight.VerdictAllow, preflight.VerdictReuse}[i]; dec.Verdict != want {
			t.Errorf("call %d: verdict %s, want %s", i+1, dec.Verdict, want)
		}
	}
	if n := counts.Snapshot()[mcptest.Quote]; n != 1 {
		t.Errorf("market_quote ran %d times, want 1 (the second call reused)", n)
	}
}

// TestSessionReceiptsPlantedOnContinuation: a call continued after the
// upstream's input_required gets no new receipt, and the upstream cannot
// plant one either: the receipt members an upstream puts in the final
// result's _meta are dropped (its other members kept), as on the first
// round, so that every receipt a client finds on a result is the guard's.
func TestSessionReceiptsPlantedOnContinuation(t *testing.T) {
	signer := receiptSigner(t)
	g := exactlySession(t, &mcpguard.Options{BudgetUSD: "1", Receipts: signer,
		Specs: []tools.Spec{{Operation: preflight.Operation{Name: "ask"}, PriceUSD: "0.25"}}})
	// A receipt the guard really signed, of another call, that an upstream
	// could hand back as if it were this call's.
	other, err := g.CallTool(context.Background(), json.RawMessage(`{"name":"look","arguments":{}}`), func(context.Context) (json.RawMessage, error) {
		return json.RawMessage(`{"content":[]}`), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	om := m2(t, other)
	planted := `{"_meta":{"trace":"t-2","` + receipt.MetaKey + `":` + string(om[receipt.MetaKey]) + `,"` + receipt.RequestMetaKey + `":` + string(om[receipt.RequestMetaKey]) +
		`,"` + receipt.ResponseMetaKey + `":` + string(om[receipt.ResponseMetaKey]) + `},"content":[{"type":"text","text":"done"}]}`
	answers := []string{`{"resultType":"input_required","inputRequests":{"q":{"method":"elicitation/create","params":{}}},"requestState":"s1"}`, planted}
	runs := 0
	call := func(params string) []byte {
		t.Helper()
		res, err := g.CallTool(context.Background(), json.RawMessage(params), func(context.Context) (json.RawMessage, error) {
			runs++
			return json.RawMessage(answers[runs-1]), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	checkReceipt(t, call(`{"name":"ask","arguments":{}}`), signer.Keys(), g.Agent().Guard().Catalog(), m2Receipt(t, om).Hash())
	final := call(`{"name":"ask","arguments":{},"inputResponses":{"q":{}},"requestState":"s1"}`)
	if runs != 2 {
		t.Fatalf("the continuation ran %d rounds, want 2", runs)
	}
	m := m2(t, final)
	for _, k := range []string{receipt.MetaKey, receipt.RequestMetaKey, receipt.ResponseMetaKey} {
		if _, ok := m[k]; ok {
			t.Errorf("the upstream's %s survived on the continued call's result: %s", k, final)
		}
	}
	if string(m["trace"]) != `"t-2"` || !strings.HasSuffix(string(final), `,"content":[{"type":"text","text":"done"}]}`) {
		t.Errorf("the upstream's other members were not kept as they were: %s", final)
	}
}

func m2Receipt(t *testing.T, meta map[string]json.RawMessage) receipt.Receipt {
	t.Helper()
	rc, err := receipt.Parse(meta[receipt.MetaKey])
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

// TestSessionReceiptsChainSkipsErrors: a call whose forwarding fails
// (the upstream's error reaches the client, no result) carries no receipt,
// and so takes no place in the chain: the next result's receipt names the
// last receipt the client was given, and the receipts the client holds
// form one unbroken chain.
func TestSessionReceiptsChainSkipsErrors(t *testing.T) {
	signer := receiptSigner(t)
	g := exactlySession(t, &mcpguard.Options{BudgetUSD: "1", Receipts: signer})
	catalog := g.Agent().Guard().Catalog()
	ok := func(context.Context) (json.RawMessage, error) { return json.RawMessage(`{"content":[]}`), nil }
	fails := func(context.Context) (json.RawMessage, error) { return nil, errors.New("upstream: connection reset") }

	first, err := g.CallTool(context.Background(), json.RawMessage(`{"name":"look","arguments":{"n":1}}`), ok)
	if err != nil {
		t.Fatal(err)
	}
	r1 := checkReceipt(t, first, signer.Keys(), catalog, "")
	if res, err := g.CallTool(context.Background(), json.RawMessage(`{"name":"look","arguments":{"n":2}}`), fails); err == nil {
		t.Fatalf("the failed call answered %s, want its error", res)
	}
	third, err := g.CallTool(context.Background(), json.RawMessage(`{"name":"look","arguments":{"n":3}}`), ok)
	if err != nil {
		t.Fatal(err)
	}
	r3 := checkReceipt(t, third, signer.Keys(), catalog, r1.Hash())
	if f := receipt.CheckChain("", []receipt.Receipt{r1, r3}); len(f) != 0 {
		t.Errorf("the receipts the client was given do not form a chain: %+v", f)
	}
}
