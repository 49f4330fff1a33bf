package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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
		{map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, false, ""},
		{map[string]string{"OTEL_SDK_DISABLED": "TRUE", "OTEL_TRACES_EXPORTER": "otlp"}, false, ""},
		{map[string]string{"OTEL_SDK_DISABLED": "false", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, true, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "notaurl"}, false, `OTEL_EXPORTER_OTLP_ENDPOINT="notaurl" is not an http(s) URL with a host`},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "ftp://c/v1/traces"}, false, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="ftp://c/v1/traces" is not an http(s) URL`},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "HTTPS://c:4318", "OTEL_EXPORTER_OTLP_HEADERS": "api-key=s%20ecret, team = ops", "OTEL_EXPORTER_OTLP_TIMEOUT": "10000", "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"}, true, ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_HEADERS": "garbage"}, false, "OTEL_EXPORTER_OTLP_HEADERS: entry 1 of 1 is not a header name, '=' and a URL-encoded value"},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "a=1,bad key=secret-value"}, false, "OTEL_EXPORTER_OTLP_TRACES_HEADERS: entry 2 of 2"},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_HEADERS": "a=%zz"}, false, "entry 1 of 1"},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TIMEOUT": "abc"}, false, `OTEL_EXPORTER_OTLP_TIMEOUT="abc" is not a whole number of milliseconds`},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "10s"}, false, `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT="10s" is not a whole number`},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"}, false, `OTEL_EXPORTER_OTLP_COMPRESSION="zstd" is not supported: want gzip or none`},
		{map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "garbage"}, false, ""}, // tracing off: not read
	}
	for _, tc := range tests {
		got, err := tracingWanted(func(k string) string { return tc.env[k] })
		if err != nil && strings.Contains(err.Error(), "secret") && !strings.Contains(err.Error(), "may be secrets") {
			t.Errorf("%v: the error shows a header value: %v", tc.env, err)
		}
		if (err == nil && got != tc.want) || (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%v: %v, %v; want %v, error containing %q", tc.env, got, err, tc.want, tc.wantErr)
		}
	}
}

// TestOpenTelemetryLogsAreJSON: a line the OpenTelemetry SDK logs itself
// (here: a CA certificate file it cannot read) reaches the server's JSON
// log, marked as the SDK's, instead of a plain-text line on standard error.
func TestOpenTelemetryLogsAreJSON(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
	t.Setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", filepath.Join(t.TempDir(), "missing.pem"))
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewJSONHandler(&lockedWriter{w: &logs, mu: &mu}, nil))
	tp, err := startTracing(context.Background(), os.Getenv, logger)
	if err != nil || tp == nil {
		t.Fatalf("startTracing: %v, %v", tp, err)
	}
	tp.Shutdown(context.Background())
	mu.Lock()
	defer mu.Unlock()
	var found bool
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		found = found || (m["msg"] == "read tls ca cert file" && m["component"] == "opentelemetry" && m["level"] == "ERROR")
	}
	if !found {
		t.Errorf("no JSON line from the SDK about the certificate file:\n%s", logs.String())
	}
}
