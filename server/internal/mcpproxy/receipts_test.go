package mcpproxy

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/agentpreflight/preflight/agent/mcpguard/mcptest"
	"github.com/agentpreflight/preflight/receipt"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestProxyReceipts: with a signing key, each call the proxy decides
// reaches the client with its receipt, the request decided and the
// decision in _meta, which verify and recompute (with the catalog of the
// same spec and tool list), chained within the run; the second call of a
// read-only tool is reused, not run, and signed all the same.
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
			url, _ := startProxy(t, HTTPDialer(up, nil), opts)
			cs := connect(t, url, v)
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
			catalog := g.Agent().Guard().Catalog()

			var chain []receipt.Receipt
			for i, want := range []preflight.Verdict{preflight.VerdictAllow, preflight.VerdictReuse} {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcptest.Quote, Arguments: map[string]any{"symbol": "ACME"}})
				if err != nil {
					t.Fatal(err)
				}
				meta := map[string]json.RawMessage{}
				for k, val := range res.Meta {
					meta[k], _ = json.Marshal(val)
				}
				rc, err := receipt.Parse(meta[receipt.MetaKey])
				if err != nil {
					t.Fatalf("call %d: _meta %v: %v", i+1, res.Meta, err)
				}
				prev := ""
				if i > 0 {
					prev = chain[i-1].Hash()
				}
				ver, err := receipt.Verify(meta[receipt.RequestMetaKey], meta[receipt.ResponseMetaKey], rc, signer.Keys(), &receipt.VerifyOptions{Catalog: catalog, Prev: prev})
				if err != nil {
					t.Fatal(err)
				}
				if !ver.OK() {
					t.Errorf("call %d: %+v", i+1, ver.Findings)
				}
				var dec preflight.ToolCallDecision
				if err := json.Unmarshal(meta[receipt.ResponseMetaKey], &dec); err != nil || dec.Verdict != want {
					t.Errorf("call %d: verdict %s (%v), want %s", i+1, dec.Verdict, err, want)
				}
				chain = append(chain, rc)
			}
			if n := counts.Snapshot()[mcptest.Quote]; n != 1 {
				t.Errorf("market_quote ran %d times upstream, want 1", n)
			}
		})
	}
}
