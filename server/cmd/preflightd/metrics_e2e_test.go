package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// freeAddr returns a loopback address nothing listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func httpGet(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestMetricsListener starts the real binary with --metrics-addr: the
// metrics are served there and not on the API's address, they count the
// API's requests, and the scrape (Go runtime and process collectors
// included) passes promtool check metrics.
func TestMetricsListener(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	maddr := freeAddr(t)
	d := startDaemon(t, buildBinary(t), "--metrics-addr", maddr)
	api := "http://" + d.addr
	if s, _ := httpGet(t, api+"/health"); s != 200 {
		t.Fatalf("health %d", s)
	}
	if s, _ := httpGet(t, api+"/metrics"); s != 404 {
		t.Errorf("/metrics on the API address: %d, want 404 (metrics have their own listener)", s)
	}
	s, scrape := httpGet(t, "http://"+maddr+"/metrics")
	if s != 200 {
		t.Fatalf("scrape %d", s)
	}
	for _, want := range []string{
		`preflight_http_requests_total{code="200",route="/health"} 1`,
		`preflight_http_requests_total{code="404",route="unmatched"} 1`,
		"preflight_http_requests_in_flight 0",
		"preflight_mcp_sessions_open 0",
		"go_goroutines ", "process_cpu_seconds_total ",
	} {
		if !bytes.Contains(scrape, []byte(want)) {
			t.Errorf("scrape lacks %q", want)
		}
	}
	if promtool, err := exec.LookPath("promtool"); err != nil {
		msg := "promtool is not installed (Debian package prometheus); the binary's scrape was not linted"
		if os.Getenv("CI") == "true" {
			t.Error(msg)
		} else {
			fmt.Fprintln(os.Stderr, "SKIP lint of the binary's metrics scrape:", msg)
		}
	} else {
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = bytes.NewReader(scrape)
		if out, err := cmd.CombinedOutput(); err != nil || len(strings.TrimSpace(string(out))) > 0 {
			t.Errorf("promtool check metrics: %v\n%s", err, out)
		}
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	if err := <-d.done; err != nil {
		t.Errorf("exit: %v", err)
	}
}

func TestTracingWanted(t *testing.T) {
	tests := []struct {
		env     map[string]string
		want    bool
		wantErr string
	}{
		{nil, false, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, true, ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true, ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, false, ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, false, `OTEL_TRACES_EXPORTER="zipkin" is not supported`},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, false, `OTEL_EXPORTER_OTLP_PROTOCOL="grpc" is not supported`},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, true, ""},
	}
	for _, tc := range tests {
		got, err := tracingWanted(func(k string) string { return tc.env[k] })
		if got != tc.want || (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%v: %v, %v; want %v, error containing %q", tc.env, got, err, tc.want, tc.wantErr)
		}
	}
}
