package mcpproxy

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/agentpreflight/preflight/agent/mcpguard/mcptest"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/agentpreflight/preflight/receipt"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestProxyReceipts: with a signing key, each call the proxy decides
// reaches the client with its receipt, the request decided and the
// decision in _meta, which verify and recompute with nothing but the key
// document and the catalog the proxy serves (the catalog of the same spec
// and tool list), chained within the run; the second call of a read-only
// tool is reused, not run, and signed all the same; an edited decision is
// caught.
func TestProxyReceipts(t *testing.T) {
	seed := sha256.Sum256([]byte("proxy receipts"))
	signer, err := receipt.NewSigner(ed25519.NewKeyFromSeed(seed[:]))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"2025-11-25", ""} {
		t.Run("version="+v, func(t *testing.T) {
			up, counts := httpUpstream(t)
			opts := *mcptest.ScriptGuard()
			opts.Receipts = signer
			base := startAuditProxy(t, Options{Dial: HTTPDialer(up, nil), Guard: opts})
			cs := connect(t, base+"/mcp", v)
			ctx := context.Background()
			listed, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			// The catalog the proxy decided with: the same spec over the same list.
			g, err := mcpguard.NewSession(&opts)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			list, _ := json.Marshal(listed)
			g.SawToolsList("", list)
			local := g.Agent().Guard().Catalog()

			var chain []receipt.Receipt
			var metas []map[string]json.RawMessage
			wantVerdicts := []preflight.Verdict{preflight.VerdictAllow, preflight.VerdictReuse}
			for i, want := range wantVerdicts {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcptest.Quote, Arguments: map[string]any{"symbol": "ACME"}})
				if err != nil {
					t.Fatal(err)
				}
				meta := map[string]json.RawMessage{}
				for k, val := range res.Meta {
					meta[k], _ = json.Marshal(val)
				}
				var dec preflight.ToolCallDecision
				if err := json.Unmarshal(meta[receipt.ResponseMetaKey], &dec); err != nil || dec.Verdict != want {
					t.Errorf("call %d: verdict %s (%v), want %s", i+1, dec.Verdict, err, want)
				}
				metas = append(metas, meta)
			}

			// What an auditor fetches from the proxy, and nothing else.
			run := http.Header{}
			if id := cs.ID(); id != "" {
				run.Set(sessionHeader, id)
			}
			keysDoc := get(t, base+receipt.KeysPath, nil, 200)
			keys, err := receipt.ParseKeys(keysDoc)
			if err != nil {
				t.Fatalf("the key document: %v\n%s", err, keysDoc)
			}
			file := get(t, base+CatalogPath, run, 200)
			catalog, _, err := tools.DecodeSpecFile(file)
			if err != nil {
				t.Fatalf("the catalog: %v\n%s", err, file)
			}
			if diff := cmp.Diff(local.Operations(), catalog.Operations()); diff != "" {
				t.Errorf("served catalog (-the guard's +served):\n%s", diff)
			}
			for i, meta := range metas {
				rc, err := receipt.Parse(meta[receipt.MetaKey])
				if err != nil {
					t.Fatalf("call %d: _meta %s: %v", i+1, meta, err)
				}
				prev := ""
				if i > 0 {
					prev = chain[i-1].Hash()
				}
				ver, err := receipt.Verify(meta[receipt.RequestMetaKey], meta[receipt.ResponseMetaKey], rc, keys, &receipt.VerifyOptions{Catalog: catalog, Prev: prev})
				if err != nil {
					t.Fatal(err)
				}
				if !ver.OK() {
					t.Errorf("call %d: %+v", i+1, ver.Findings)
				}
				chain = append(chain, rc)
				// The same decision edited: the signature no longer holds
				// and the recomputation disagrees at the edited field.
				edited := bytes.Replace(meta[receipt.ResponseMetaKey], []byte(`"decision":"`+string(wantVerdicts[i])+`"`), []byte(`"decision":"block"`), 1)
				if bytes.Equal(edited, meta[receipt.ResponseMetaKey]) {
					t.Fatalf("call %d: no decision to edit in %s", i+1, edited)
				}
				ver, err = receipt.Verify(meta[receipt.RequestMetaKey], edited, rc, keys, &receipt.VerifyOptions{Catalog: catalog, Prev: prev})
				if err != nil {
					t.Fatal(err)
				}
				if ver.OK() || !hasFindingAt(ver.Findings, "/receipt/sig") || !hasFindingAt(ver.Findings, "/response/decision") {
					t.Errorf("call %d: an edited decision gives findings %+v; want the signature's and the decision's", i+1, ver.Findings)
				}
			}
			if n := counts.Snapshot()[mcptest.Quote]; n != 1 {
				t.Errorf("market_quote ran %d times upstream, want 1", n)
			}
		})
	}
}

// startAuditProxy serves a proxy of opts at /mcp with its audit routes
// beside it, as preflightd proxy does, and returns the server's URL.
func startAuditProxy(t *testing.T, opts Options) string {
	t.Helper()
	p := New(opts)
	mux := http.NewServeMux()
	mux.Handle("/mcp", p)
	mux.HandleFunc(receipt.KeysPath, p.ServeReceiptKeys)
	mux.HandleFunc(CatalogPath, p.ServeCatalog)
	ts := httptest.NewServer(mux)
	t.Cleanup(func() { p.Close(); ts.Close() })
	return ts.URL
}

// get fetches url with header and returns the body, failing the test when
// the status is not want.
func get(t *testing.T, url string, header http.Header, want int) []byte {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != want {
		t.Fatalf("GET %s: %d %s, want %d", url, resp.StatusCode, body, want)
	}
	return body
}

func hasFindingAt(fs []receipt.Finding, path string) bool {
	for _, f := range fs {
		if f.Path == path {
			return true
		}
	}
	return false
}

// TestProxyAuditRoutes: the catalog is the caller's run's, without the
// tools its principal may not see, and neither route answers more than it
// should.
func TestProxyAuditRoutes(t *testing.T) {
	seed := sha256.Sum256([]byte("proxy audit routes"))
	signer, err := receipt.NewSigner(ed25519.NewKeyFromSeed(seed[:]))
	if err != nil {
		t.Fatal(err)
	}
	up, _ := httpUpstream(t)
	serve := func(g mcpguard.Options) string {
		p := New(Options{Dial: HTTPDialer(up, nil), Guard: g,
			ToolAllowed: func(principal, tool string) bool { return principal != "bob" || tool != mcptest.Ticket }})
		mux := http.NewServeMux()
		mux.Handle("/mcp", p)
		mux.HandleFunc(receipt.KeysPath, p.ServeReceiptKeys)
		mux.HandleFunc(CatalogPath, p.ServeCatalog)
		ts := httptest.NewServer(asPrincipal(mux))
		t.Cleanup(func() { p.Close(); ts.Close() })
		return ts.URL
	}
	opts := *mcptest.ScriptGuard()
	opts.Receipts = signer
	base := serve(opts)
	ctx := context.Background()
	for _, who := range []string{"alice", "bob"} {
		if _, err := statelessCall(t, ctx, base+"/mcp", who, "r1", 1, mcptest.Quote, `{"symbol":"ACME"}`); err != nil {
			t.Fatal(err)
		}
	}
	names := func(file []byte) []string {
		t.Helper()
		c, _, err := tools.DecodeSpecFile(file)
		if err != nil {
			t.Fatalf("%v\n%s", err, file)
		}
		var out []string
		for _, op := range c.Operations() {
			out = append(out, op.Name)
		}
		return out
	}
	as := func(who, run string) http.Header {
		h := http.Header{"X-Test-Principal": {who}}
		if run != "" {
			h.Set(RunHeader, run)
		}
		return h
	}
	alice := names(get(t, base+CatalogPath, as("alice", "r1"), 200))
	bob := names(get(t, base+CatalogPath, as("bob", "r1"), 200))
	if !slices.Contains(alice, mcptest.Ticket) || !slices.Contains(alice, mcptest.Quote) {
		t.Errorf("alice's catalog: %v; want every listed tool", alice)
	}
	if slices.Contains(bob, mcptest.Ticket) || !slices.Contains(bob, mcptest.Quote) || len(bob) != len(alice)-1 {
		t.Errorf("bob's catalog: %v; want alice's %v without %s, which bob may not see", bob, alice, mcptest.Ticket)
	}
	get(t, base+receipt.KeysPath, nil, 200)
	for _, tc := range []struct {
		name   string
		header http.Header
		want   int
	}{
		{"another principal's run", as("carol", "r1"), 404},
		{"a run never guarded", as("alice", "r2"), 404},
		{"a session that is not open", http.Header{"X-Test-Principal": {"alice"}, sessionHeader: {"nope"}}, 404},
		{"a bad run handle", as("alice", "a b"), 400},
	} {
		t.Run(tc.name, func(t *testing.T) { get(t, base+CatalogPath, tc.header, tc.want) })
	}
	t.Run("POST", func(t *testing.T) {
		resp, err := http.Post(base+CatalogPath, "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 405 {
			t.Errorf("status %d, want 405", resp.StatusCode)
		}
	})
	t.Run("no signing key", func(t *testing.T) {
		base := serve(*mcptest.ScriptGuard())
		if _, err := statelessCall(t, ctx, base+"/mcp", "alice", "r1", 1, mcptest.Quote, `{"symbol":"ACME"}`); err != nil {
			t.Fatal(err)
		}
		get(t, base+receipt.KeysPath, nil, 404)
		get(t, base+CatalogPath, as("alice", "r1"), 404)
	})
}
