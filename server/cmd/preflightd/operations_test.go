package main

import (
	"io"
	"path/filepath"
	"strings"
	"testing"
)

func TestOperationsFlag(t *testing.T) {
	good := filepath.Join("..", "..", "..", "testdata", "catalog", "operations.json")
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

	o, err := parseFlags(nil, env(map[string]string{"PREFLIGHT_OPERATIONS": good}), io.Discard)
	if err != nil || o.operations != good {
		t.Fatalf("env fallback: %q, %v", o.operations, err)
	}
	cfg, err := o.serverConfig()
	if err != nil || cfg.Catalog == nil || len(cfg.Catalog.Operations()) != 5 {
		t.Fatalf("serverConfig: %v, %v", cfg.Catalog, err)
	}
	o, _ = parseFlags(nil, env(nil), io.Discard)
	if cfg, err := o.serverConfig(); err != nil || cfg.Catalog != nil {
		t.Errorf("without the flag the catalog is %v, %v; want nil (the built-ins, documents unchanged)", cfg.Catalog, err)
	}
	o, _ = parseFlags([]string{"--operations", "testdata/nope.json"}, env(nil), io.Discard)
	if _, err := o.serverConfig(); err == nil || !strings.HasPrefix(err.Error(), "--operations: stat testdata/nope.json") {
		t.Errorf("missing file: %v", err)
	}
	notJSON := filepath.Join("..", "..", "openapi.go")
	o, _ = parseFlags([]string{"--operations", notJSON}, env(nil), io.Discard)
	if _, err := o.serverConfig(); err == nil || !strings.Contains(err.Error(), "invalid_json") {
		t.Errorf("not JSON: %v", err)
	}
}
