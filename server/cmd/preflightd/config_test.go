package main

import (
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want options
	}{
		{"defaults", nil, nil, options{addr: "127.0.0.1:8080", ops: defaultOps()}},
		{"environment fallback", nil, map[string]string{
			"PREFLIGHT_ADDR": "127.0.0.1:0", "PREFLIGHT_BASE_URL": "https://api.example.com",
			"PREFLIGHT_MCP_TRUST_PROXY_HOST": "true", "PREFLIGHT_MAX_TIMEOUT_SECONDS": "90",
		}, options{addr: "127.0.0.1:0", baseURL: "https://api.example.com", mcpTrustProxyHost: true, maxTimeoutSeconds: 90, ops: defaultOps()}},
		{"empty environment variable keeps the default", nil, map[string]string{"PREFLIGHT_ADDR": ""},
			options{addr: "127.0.0.1:8080", ops: defaultOps()}},
		{"flag wins over environment", []string{"--addr", "127.0.0.1:9", "--max-timeout-seconds=120"},
			map[string]string{"PREFLIGHT_ADDR": "127.0.0.1:0", "PREFLIGHT_MAX_TIMEOUT_SECONDS": "90"},
			options{addr: "127.0.0.1:9", maxTimeoutSeconds: 120, ops: defaultOps()}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseFlags(tc.args, func(k string) string { return tc.env[k] }, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(options{}, opsOptions{})); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
	}{
		{"bad base url", []string{"--base-url", "api.example.com"}, nil, "--base-url"},
		{"base url with query", []string{"--base-url", "https://a.example/?x=1"}, nil, "--base-url"},
		{"bad site url", []string{"--site-url", "ftp://a.example"}, nil, "--site-url"},
		{"bad pay-to", []string{"--pay-to", "0x123", "--facilitator-url", "https://f.example"}, nil, "invalid payment configuration"},
		{"pay-to without facilitator", []string{"--pay-to", "0x1111111111111111111111111111111111111111"}, nil, "invalid payment configuration"},
		{"bad network", []string{"--pay-to", "0x1111111111111111111111111111111111111111", "--facilitator-url", "https://f.example", "--network", "eip155:1"}, nil, "invalid payment configuration"},
		{"payment flags without pay-to", []string{"--facilitator-url", "https://f.example"}, nil, "--pay-to is empty"},
		{"bad env integer", nil, map[string]string{"PREFLIGHT_MAX_TIMEOUT_SECONDS": "soon"}, "not an integer"},
		{"bad env boolean", nil, map[string]string{"PREFLIGHT_MCP_TRUST_PROXY_HOST": "perhaps"}, "not a boolean"},
		{"unknown flag", []string{"--port", "8080"}, nil, "flag provided but not defined"},
		{"stray argument", []string{"serve"}, nil, "unexpected arguments"},
		{"empty addr", []string{"--addr", ""}, nil, "--addr is empty; want a listen address such as 127.0.0.1:8080"},
		{"empty addr wins over environment", []string{"--addr="}, map[string]string{"PREFLIGHT_ADDR": "127.0.0.1:9"}, "--addr is empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseFlags(tc.args, func(k string) string { return tc.env[k] }, io.Discard)
			if err == nil {
				_, err = o.serverConfig()
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestPaidConfig(t *testing.T) {
	o, err := parseFlags([]string{"--pay-to", "0x1111111111111111111111111111111111111111", "--facilitator-url", "https://x402.example/facilitator"}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := o.serverConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Payment == nil || cfg.Payment.PayTo != "0x1111111111111111111111111111111111111111" {
		t.Errorf("payment %+v", cfg.Payment)
	}
}
