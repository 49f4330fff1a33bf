package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/agentpreflight/preflight/receipt"
)

const (
	request = `{"runId":"r1","stepId":"s1","tool":{"provider":"search","operation":"web_search","request":{"query":"signed receipts"},"estimatedExternalCostUsd":0.01},"budget":{"remainingUsd":1}}`
	quote   = `{"runId":"r1","stepId":"s1","tool":{"provider":"mcp","operation":"market_quote","request":{"symbol":"ACME"},"estimatedExternalCostUsd":0.02},"budget":{"remainingUsd":1}}`
	ops     = `{"builtins": false, "operations": [{"provider": "mcp", "name": "market_quote", "priceUsd": 0.02}]}`
)

func signer(t *testing.T, name string) *receipt.Signer {
	t.Helper()
	seed := sha256.Sum256([]byte(name))
	s, err := receipt.NewSigner(ed25519.NewKeyFromSeed(seed[:]))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// decided runs the library on req with catalog c and signs the answer.
func decided(t *testing.T, s *receipt.Signer, c *preflight.Catalog, req, prev string) (response []byte, rc receipt.Receipt) {
	t.Helper()
	dec, err := c.DecideJSON([]byte(req))
	if err != nil {
		t.Fatal(err)
	}
	response, _ = json.Marshal(dec)
	rc, err = s.Sign(response, prev)
	if err != nil {
		t.Fatal(err)
	}
	return response, rc
}

// TestVerifyCommand runs the command as a person would, on files, for a
// valid receipt and each way one fails, and checks the exit status and
// what it says.
func TestVerifyCommand(t *testing.T) {
	dir := t.TempDir()
	file := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	s, other := signer(t, "cmd signer"), signer(t, "someone else")
	response, rc := decided(t, s, nil, request, "")
	chained, rc2 := decided(t, s, nil, request, rc.Hash())
	catalog, _, err := tools.DecodeSpecFile([]byte(ops))
	if err != nil {
		t.Fatal(err)
	}
	quoted, rcq := decided(t, s, catalog, quote, "")
	der, _ := x509.MarshalPKIXPublicKey(s.PublicKey())

	f := map[string]string{
		"request":   file("request.json", []byte(request)),
		"otherReq":  file("other-request.json", []byte(strings.Replace(request, "signed receipts", "signed receipt", 1))),
		"response":  file("response.json", response),
		"edited":    file("edited.json", bytes.Replace(response, []byte(`"allow"`), []byte(`"block"`), 1)),
		"receipt":   file("receipt.txt", append(rc.Marshal(), '\n')),
		"chained":   file("chained.json", chained),
		"receipt2":  file("receipt2.txt", rc2.Marshal()),
		"jwks":      file("keys.json", s.KeysDocument()),
		"pem":       file("key.pem", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})),
		"otherKeys": file("other.json", other.KeysDocument()),
		"quote":     file("quote.json", []byte(quote)),
		"quoted":    file("quoted.json", quoted),
		"rcq":       file("rcq.txt", rcq.Marshal()),
		"ops":       file("ops.json", []byte(ops)),
		"garbage":   file("garbage.txt", []byte("not a receipt")),
		"meta": file("result.json", []byte(`{"content":[],"_meta":{"`+receipt.MetaKey+`":`+string(rc.Marshal())+
			`,"`+receipt.RequestMetaKey+`":`+request+`,"`+receipt.ResponseMetaKey+`":`+string(response)+`}}`)),
		"metaOnly": file("meta.json", []byte(`{"`+receipt.MetaKey+`":`+string(rc.Marshal())+
			`,"`+receipt.RequestMetaKey+`":`+request+`,"`+receipt.ResponseMetaKey+`":`+string(response)+`}`)),
		"metaNoRequest": file("meta-short.json", []byte(`{"`+receipt.MetaKey+`":`+string(rc.Marshal())+`,"`+receipt.ResponseMetaKey+`":`+string(response)+`}`)),
	}
	args := func(req, resp, rcpt, keys string, more ...string) []string {
		return append([]string{"verify", "--request", f[req], "--response", f[resp], "--receipt", f[rcpt], "--keys", f[keys]}, more...)
	}
	tests := []struct {
		name    string
		args    []string
		stdin   string
		status  int
		wantOut []string
		wantErr string
	}{
		{"valid, JWKS keys", args("request", "response", "receipt", "jwks"), "", exitOK, []string{"verified: the decision was signed by key " + s.KeyID(), "hash: " + rc.Hash()}, ""},
		{"valid, PEM key", args("request", "response", "receipt", "pem"), "", exitOK, []string{"verified"}, ""},
		{"valid chain link", args("request", "chained", "receipt2", "jwks", "--prev", rc.Hash()), "", exitOK, []string{"verified", "prev: " + rc.Hash()}, ""},
		{"valid, the receipt on standard input", append(args("request", "response", "receipt", "jwks")[:5], "--receipt", "-", "--keys", f["jwks"]), string(rc.Marshal()), exitOK, []string{"verified"}, ""},
		{"changed response", args("request", "edited", "receipt", "jwks"), "", exitMismatch,
			[]string{"NOT VERIFIED: 2 finding(s)", "signature at /receipt/sig", `response at /response/decision: the response differs from the answer the library computes for the request (want "allow", got "block")`}, ""},
		{"changed request", args("otherReq", "response", "receipt", "jwks"), "", exitMismatch, []string{"request at /receipt/requestFingerprint", "response at /response/requestFingerprint"}, ""},
		{"wrong key", args("request", "response", "receipt", "otherKeys"), "", exitMismatch, []string{"unknown_key at /receipt/kid"}, ""},
		{"broken chain", args("request", "response", "receipt", "jwks", "--prev", rc2.Hash()), "", exitMismatch, []string{"chain at /receipt/prev", "got absent"}, ""},
		{"a catalog decision, with the catalog", args("quote", "quoted", "rcq", "jwks", "--operations", f["ops"]), "", exitOK, []string{"verified"}, ""},
		{"a catalog decision, without it", args("quote", "quoted", "rcq", "jwks"), "", exitMismatch, []string{`want "advise", got "allow"`}, ""},
		{"a guard's result, --meta", []string{"verify", "--meta", f["meta"], "--keys", f["jwks"]}, "", exitOK, []string{"verified"}, ""},
		{"a guard's _meta, --meta", []string{"verify", "--meta", f["metaOnly"], "--keys", f["pem"]}, "", exitOK, []string{"verified"}, ""},
		{"--meta without the request", []string{"verify", "--meta", f["metaNoRequest"], "--keys", f["jwks"]}, "", exitError, nil, "receipt-request"},
		{"--meta and --request", []string{"verify", "--meta", f["meta"], "--request", f["request"], "--keys", f["jwks"]}, "", exitError, nil, "alone"},
		{"not a receipt", args("request", "response", "garbage", "jwks"), "", exitError, nil, "--receipt"},
		{"a request the library refuses", args("receipt", "response", "receipt", "jwks"), "", exitError, nil, "not a tool-call request"},
		{"a missing flag", []string{"verify", "--request", f["request"]}, "", exitError, nil, "required"},
		{"a bad prev", args("request", "response", "receipt", "jwks", "--prev", "xyz"), "", exitError, nil, "--prev"},
		{"no subcommand", nil, "", exitError, nil, "usage: preflight verify"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			got := run(tc.args, strings.NewReader(tc.stdin), &out, &errOut)
			if got != tc.status {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", got, tc.status, out.String(), errOut.String())
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("stdout does not say %q:\n%s", w, out.String())
				}
			}
			if !strings.Contains(errOut.String(), tc.wantErr) {
				t.Errorf("stderr does not say %q:\n%s", tc.wantErr, errOut.String())
			}
		})
	}

	var out bytes.Buffer
	if got := run(append(args("request", "edited", "receipt", "jwks"), "--json"), nil, &out, &out); got != exitMismatch {
		t.Fatalf("--json: exit %d: %s", got, out.String())
	}
	var v receipt.Verification
	if err := json.Unmarshal(out.Bytes(), &v); err != nil || len(v.Findings) != 2 || v.KeyID != s.KeyID() {
		t.Errorf("--json printed %s (%v)", out.String(), err)
	}
}
