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

// TestTracingWanted: preflightd decides only whether to export traces;
// the other OTEL_* variables are the SDK's to read, so none of them turns
// tracing on or off or is refused here.
func TestTracingWanted(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    bool
		wantErr string
	}{
		{"nothing set", nil, false, ""},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true, ""},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, true, ""},
		{"exporter otlp, default endpoint", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true, ""},
		{"exporter none wins over an endpoint", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, false, ""},
		{"an exporter preflightd does not ship", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, false, `OTEL_TRACES_EXPORTER="zipkin" is not supported`},
		{"SDK disabled", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, false, ""},
		{"SDK disabled, any case", map[string]string{"OTEL_SDK_DISABLED": "TRUE", "OTEL_TRACES_EXPORTER": "otlp"}, false, ""},
		{"SDK not disabled", map[string]string{"OTEL_SDK_DISABLED": "false", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, true, ""},
		{"exporter variables are the SDK's", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
			"OTEL_EXPORTER_OTLP_HEADERS": "garbage", "OTEL_EXPORTER_OTLP_TIMEOUT": "10s", "OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"}, true, ""},
		{"exporter variables alone do not turn tracing on", map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "api-key=secret"}, false, ""},
	}
	for _, tc := range tests {
		got, err := tracingWanted(func(k string) string { return tc.env[k] })
		if got != tc.want || (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: %v, %v; want %v, error containing %q", tc.name, got, err, tc.want, tc.wantErr)
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

// TestOpenTelemetryReadsItsOwnVariables: preflightd passes the exporter
// variables to the SDK unread. One the SDK cannot use does not stop the
// program; the SDK says so itself in the JSON log, and no line shows a
// header value, which may be a secret.
func TestOpenTelemetryReadsItsOwnVariables(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "api-keys3cret-1,bad key=s3cret-2,k=%zzs3cret-3")
	t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "10s")
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewJSONHandler(&lockedWriter{w: &logs, mu: &mu}, nil))
	tp, err := startTracing(context.Background(), os.Getenv, logger)
	if err != nil || tp == nil {
		t.Fatalf("startTracing: %v, %v; want a provider, the SDK's variables are its own", tp, err)
	}
	tp.Shutdown(context.Background())
	mu.Lock()
	defer mu.Unlock()
	msgs := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		if m["component"] == "opentelemetry" {
			msgs[fmt.Sprint(m["msg"])]++
		}
	}
	if msgs["parse headers"] != 2 || msgs["escape header value"] != 1 || msgs["parse duration"] != 1 {
		t.Errorf("SDK lines by message %v; want its complaints about two header entries, one header value and the timeout:\n%s", msgs, logs.String())
	}
	if strings.Contains(logs.String(), "s3cret") {
		t.Errorf("the log shows a header value:\n%s", logs.String())
	}
}
