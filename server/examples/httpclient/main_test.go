package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/server"
)

func TestRunUnpaid(t *testing.T) {
	srv := httptest.NewServer(server.New(server.Config{}))
	defer srv.Close()
	var out strings.Builder
	if err := run(context.Background(), srv.Client(), srv.URL, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"check-request: valid=false", "error minimum at /request/body/qty", "tool-call: decision=allow enforcement=execute"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestRunPaid uses the real paywall; no facilitator is contacted because
// the example never pays (the facilitator address is a closed port).
func TestRunPaid(t *testing.T) {
	srv := httptest.NewServer(server.New(server.Config{Payment: &server.Payment{
		PayTo: "0x1111111111111111111111111111111111111111", FacilitatorURL: "http://127.0.0.1:1",
	}}))
	defer srv.Close()
	var out strings.Builder
	if err := run(context.Background(), srv.Client(), srv.URL, &out); err != nil {
		t.Fatal(err)
	}
	if want := "tool-call: payment required (2000 atomic units of 0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913 on eip155:8453)"; !strings.Contains(out.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, out.String())
	}
}
