package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentpreflight/preflight/agent/mcpguard/mcptest"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/agentpreflight/preflight/receipt"
	"github.com/agentpreflight/preflight/server/internal/mcpproxy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestProxyReceiptsAudit runs `preflightd proxy --signing-key` and checks a
// proxied call's receipt as an auditor would, with nothing but the result's
// _meta and what the proxy's listener serves: the key document and the
// run's catalog, a tool-spec file read as preflight verify --operations
// reads it. An edited decision is caught. Without --signing-key neither
// route exists.
func TestProxyReceiptsAudit(t *testing.T) {
	up, _ := countingUpstream(t)
	ops := quoteOps(t)
	seed := sha256.Sum256([]byte("proxy audit key"))
	der, err := x509.MarshalPKCS8PrivateKey(ed25519.NewKeyFromSeed(seed[:]))
	if err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(t.TempDir(), "key.pem")
	os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)

	base, _ := startProxyCommand(t, "--upstream", up, "--operations", ops, "--signing-key", key)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "audit", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: mcptest.Quote, Arguments: map[string]any{"symbol": "ACME"}})
	if err != nil {
		t.Fatal(err)
	}
	meta := map[string]json.RawMessage{}
	for k, v := range res.Meta {
		meta[k], _ = json.Marshal(v)
	}

	run := http.Header{}
	if id := cs.ID(); id != "" {
		run.Set("Mcp-Session-Id", id) // the session's own run
	}
	keys, err := receipt.ParseKeys(fetch(t, base+receipt.KeysPath, nil, 200))
	if err != nil {
		t.Fatal(err)
	}
	file := fetch(t, base+mcpproxy.CatalogPath, run, 200)
	catalog, specs, err := tools.DecodeSpecFile(file)
	if err != nil {
		t.Fatalf("the served catalog: %v\n%s", err, file)
	}
	if len(specs) == 0 || specs[0].Operation.Name != mcptest.Quote || specs[0].PriceUSD.String() != mcptest.QuotePriceUSD {
		t.Errorf("the served catalog does not begin with the configured %s at %s: %s", mcptest.Quote, mcptest.QuotePriceUSD, file)
	}
	rc, err := receipt.Parse(meta[receipt.MetaKey])
	if err != nil {
		t.Fatalf("_meta %s: %v", meta, err)
	}
	opts := &receipt.VerifyOptions{Catalog: catalog}
	ver, err := receipt.Verify(meta[receipt.RequestMetaKey], meta[receipt.ResponseMetaKey], rc, keys, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !ver.OK() {
		t.Errorf("the proxy's receipt does not verify with its own keys and catalog: %+v", ver.Findings)
	}
	edited := bytes.Replace(meta[receipt.ResponseMetaKey], []byte(`"decision":"allow"`), []byte(`"decision":"block"`), 1)
	if bytes.Equal(edited, meta[receipt.ResponseMetaKey]) {
		t.Fatalf("no allow decision to edit: %s", edited)
	}
	if ver, err := receipt.Verify(meta[receipt.RequestMetaKey], edited, rc, keys, opts); err != nil || ver.OK() {
		t.Errorf("an edited decision verifies: %+v, %v", ver, err)
	}

	plain, _ := startProxyCommand(t, "--upstream", up, "--operations", ops)
	fetch(t, plain+receipt.KeysPath, nil, 404)
	fetch(t, plain+mcpproxy.CatalogPath, nil, 404)
}

// fetch GETs url with header and returns the body, failing the test when
// the status is not want.
func fetch(t *testing.T, url string, header http.Header, want int) []byte {
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
