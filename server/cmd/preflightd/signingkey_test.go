package main

import (
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/receipt"
)

// TestSigningKeyFlag: --signing-key (or PREFLIGHT_SIGNING_KEY) loads the
// key that signs; a file that is not a key, not regular, too large or
// missing stops the program with the flag's name, and never the key.
func TestSigningKeyFlag(t *testing.T) {
	dir := t.TempDir()
	seed := sha256.Sum256([]byte("preflightd test key"))
	key := ed25519.NewKeyFromSeed(seed[:])
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "key.pem")
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("key.pem", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	for _, args := range [][]string{{"--signing-key", good}, nil} {
		o, err := parseFlags(args, func(k string) string {
			if k == "PREFLIGHT_SIGNING_KEY" {
				return good
			}
			return ""
		}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := o.serverConfig()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Receipts == nil || cfg.Receipts.KeyID() != receipt.KeyID(key.Public().(ed25519.PublicKey)) {
			t.Errorf("args %q: signer %v, want the file's key", args, cfg.Receipts)
		}
	}
	for name, c := range map[string]struct{ file, wantErr string }{
		"missing":     {filepath.Join(dir, "none.pem"), "no such file"},
		"a directory": {dir, "not a regular file"},
		"not a key":   {write("notes.txt", []byte("hello")), "PRIVATE KEY"},
		"too large":   {write("big.pem", []byte(strings.Repeat("#", maxKeyFileBytes+1))), "over"},
	} {
		t.Run(name, func(t *testing.T) {
			o, err := parseFlags([]string{"--signing-key", c.file}, func(string) string { return "" }, io.Discard)
			if err == nil {
				_, err = o.serverConfig()
			}
			if err == nil || !strings.Contains(err.Error(), "--signing-key") || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("error %v, want one naming --signing-key and %q", err, c.wantErr)
			}
		})
	}
}

// TestProxySigningKeyFlag: preflightd proxy --signing-key gives every
// run's guard the signer, and refuses a file that is not a key.
func TestProxySigningKeyFlag(t *testing.T) {
	dir := t.TempDir()
	seed := sha256.Sum256([]byte("proxy flag key"))
	der, err := x509.MarshalPKCS8PrivateKey(ed25519.NewKeyFromSeed(seed[:]))
	if err != nil {
		t.Fatal(err)
	}
	good, bad := filepath.Join(dir, "key.pem"), filepath.Join(dir, "bad.pem")
	os.WriteFile(good, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
	os.WriteFile(bad, []byte("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"), 0o600)
	o, err := parseProxyFlags([]string{"--upstream", "http://127.0.0.1:1/mcp", "--signing-key", good}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	g, err := o.guardOptions()
	if err != nil || g.Receipts == nil {
		t.Fatalf("guard options: receipts %v, error %v", g.Receipts, err)
	}
	o, err = parseProxyFlags([]string{"--upstream", "http://127.0.0.1:1/mcp", "--signing-key", bad}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.guardOptions(); err == nil || !strings.Contains(err.Error(), "--signing-key") {
		t.Errorf("a public key as the signing key: error %v", err)
	}
}
