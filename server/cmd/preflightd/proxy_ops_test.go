package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/agentpreflight/preflight/agent/mcpguard/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// metaUpstream serves the test tools over Streamable HTTP (both protocol
// generations) and keeps the params._meta of every tools/call it got.
type metaUpstream struct {
	srv    *httptest.Server
	counts *mcptest.Counters
	mu     sync.Mutex
	metas  []map[string]any
}

func newMetaUpstream(t *testing.T) *metaUpstream {
	t.Helper()
	s, counts := mcptest.NewServer("")
	u := &metaUpstream{counts: counts}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m struct {
			Method string `json:"method"`
			Params struct {
				Meta map[string]any `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &m) == nil && m.Method == "tools/call" {
			u.mu.Lock()
			u.metas = append(u.metas, m.Params.Meta)
			u.mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

// scrape returns the proxy's metrics text and its families.
func scrape(t *testing.T, addr string) (string, map[string]*dto.MetricFamily) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("metrics do not parse: %v\n%s", err, b)
	}
	return string(b), fams
}

// sum adds the values of family name's series whose labels include want.
func sum(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
	total := 0.0
next:
	for _, m := range f.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			total += m.Counter.GetValue()
		case m.Gauge != nil:
			total += m.Gauge.GetValue()
		case m.Histogram != nil:
			total += float64(m.Histogram.GetSampleCount())
		}
	}
	return total
}

func sameUSD(a, b string) bool {
	x, ok1 := new(big.Rat).SetString(a)
	y, ok2 := new(big.Rat).SetString(b)
	return ok1 && ok2 && x.Cmp(y) == 0
}

// TestProxyOperatorView runs the binary with a principals file, a priced
// tool, a budget, --metrics-addr and an OTLP receiver, plays a scripted
// mix of calls through both protocol generations and checks the
// operator's view of it: /health and /ready, one log line per call with
// its fields, metrics that count the mix exactly (and pass promtool), spans
// in the caller's trace, and the trace context carried to the upstream in
// _meta.
func TestProxyOperatorView(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	up := newMetaUpstream(t)
	iss := newJWTIssuer(t)
	recv := newOTLPReceiver(t)
	const aliceKey = "pf_alice_ops_1"
	principals := writeFile(t, "principals.json", `{
  "jwt": {"issuer": "`+testIssuer+`", "audience": "`+testAudience+`", "jwks": "`+iss.srv.URL+`"},
  "principals": {"alice": {"keySha256": ["`+sha256Hex(aliceKey)+`"]}}
}`)
	ops := writeFile(t, "ops.json", `{"builtins":false,"operations":[{"provider":"mcp","name":"`+mcptest.Quote+`","priceUsd":0.10}]}`)
	d := startAuthProxy(t, bin, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + recv.srv.URL, "OTEL_SERVICE_NAME=proxy-e2e", "OTEL_BSP_SCHEDULE_DELAY=100"},
		"--upstream", up.srv.URL, "--principals", principals, "--operations", ops, "--budget-usd", "0.15", "--metrics-addr", "127.0.0.1:0")
	var metricsAddr string
	for _, l := range d.logged("metrics listening") {
		metricsAddr, _ = l["addr"].(string)
	}
	if metricsAddr == "" {
		t.Fatalf("no metrics listener logged\n%s", d.dump())
	}

	t.Run("health and readiness", func(t *testing.T) {
		for _, path := range []string{"/health", "/ready"} {
			resp, err := http.Get("http://" + d.addr + path)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || !json.Valid(b) {
				t.Errorf("%s: %d %s %s", path, resp.StatusCode, resp.Header.Get("Content-Type"), b)
			}
		}
	})
	t.Run("the proxy's HTTP errors are JSON", func(t *testing.T) {
		for _, c := range []struct{ method, session string }{{http.MethodPut, ""}, {http.MethodGet, ""}, {http.MethodPut, "x"}} {
			req, _ := http.NewRequest(c.method, "http://"+d.addr+"/mcp", nil)
			req.Header.Set("Authorization", "Bearer "+aliceKey)
			if c.session != "" {
				req.Header.Set("Mcp-Session-Id", c.session)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var e struct {
				Error struct{ Message string } `json:"error"`
			}
			if resp.StatusCode < 400 || resp.Header.Get("Content-Type") != "application/json" || json.Unmarshal(b, &e) != nil || e.Error.Message == "" ||
				resp.Header.Get("X-Request-Id") == "" {
				t.Errorf("%s (session %q): %d %s %s", c.method, c.session, resp.StatusCode, resp.Header.Get("Content-Type"), b)
			}
		}
		// A session POST the go-sdk transport refuses in plain text.
		resp, _ := post(t, d.addr, aliceKey, initializeBody)
		sid := resp.Header.Get("Mcp-Session-Id")
		req, _ := http.NewRequest(http.MethodPost, "http://"+d.addr+"/mcp", strings.NewReader(`{"jsonrpc":"2.0",`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Authorization", "Bearer "+aliceKey)
		r2, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r2.Body)
		r2.Body.Close()
		if r2.StatusCode < 400 || r2.Header.Get("Content-Type") != "application/json" || !json.Valid(b) {
			t.Errorf("a refused session POST: %d %s %s", r2.StatusCode, r2.Header.Get("Content-Type"), b)
		}
	})

	// The scripted mix. alice (API key), her default run: a priced quote
	// runs (0.10), the same quote is reused, another quote would pass the
	// 0.15 budget and is withheld (deferred), a ticket runs (the test tool
	// answers it with isError). carol (a JWT subject the file
	// does not name): a quote runs, sent inside the caller's trace. alice
	// again, without a session (2026-07-28): a ticket runs.
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	ctx := context.Background()
	alice, err := connectAs(t, d.addr, aliceKey)
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	call := func(cs *mcp.ClientSession, tool string, args map[string]any, meta mcp.Meta) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args, Meta: meta})
		if err != nil {
			t.Fatalf("%s: %v\n%s", tool, err, d.dump())
		}
		return res
	}
	if res := call(alice, mcptest.Quote, map[string]any{"symbol": "ACME"}, nil); res.IsError {
		t.Fatalf("first quote: %+v", res)
	}
	if res := call(alice, mcptest.Quote, map[string]any{"symbol": "ACME"}, nil); res.IsError {
		t.Fatalf("reused quote: %+v", res)
	}
	if res := call(alice, mcptest.Quote, map[string]any{"symbol": "BETA"}, nil); !res.IsError {
		t.Fatalf("a quote past the budget ran: %+v", res)
	}
	call(alice, mcptest.Ticket, map[string]any{"title": "ops"}, nil)
	carol, err := connectAs(t, d.addr, iss.token(t, jwt.MapClaims{"sub": "carol"}))
	if err != nil {
		t.Fatal(err)
	}
	defer carol.Close()
	call(carol, mcptest.Quote, map[string]any{"symbol": "CRL"}, mcp.Meta{"traceparent": "00-" + traceID + "-" + parentID + "-01"})
	{
		body := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"` + mcptest.Ticket + `","arguments":{"title":"stateless"},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
		req, _ := http.NewRequest(http.MethodPost, "http://"+d.addr+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", mcptest.Ticket)
		req.Header.Set("Authorization", "Bearer "+aliceKey)
		req.Header.Set("X-Request-Id", "ops-stateless-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Contains(b, []byte(`"result"`)) {
			t.Fatalf("stateless ticket: %d %s", resp.StatusCode, b)
		}
	}
	if q, tk := up.counts.Get(mcptest.Quote), up.counts.Get(mcptest.Ticket); q != 2 || tk != 2 {
		t.Fatalf("the upstream ran %d quotes and %d tickets, want 2 and 2", q, tk)
	}

	t.Run("one log line per call", func(t *testing.T) {
		lines := d.logged("mcp proxy: tools/call")
		for deadline := time.Now().Add(10 * time.Second); len(lines) < 6 && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond) // the log is read from the process's stderr
			lines = d.logged("mcp proxy: tools/call")
		}
		if len(lines) != 6 {
			t.Fatalf("%d tools/call lines, want 6\n%s", len(lines), d.dump())
		}
		type want struct{ principal, tool, answer, verdict, settled, upstream string }
		wants := []want{
			{"alice", mcptest.Quote, "ran", "allow", "0.10", "ok"},
			{"alice", mcptest.Quote, "reused", "reuse_prior_result", "", ""},
			{"alice", mcptest.Quote, "withheld", "defer", "", ""},
			{"alice", mcptest.Ticket, "ran", "allow", "0", "tool_error"}, // the test tool answers isError
			{"carol", mcptest.Quote, "ran", "allow", "0.10", "ok"},
			{"alice", mcptest.Ticket, "ran", "allow", "0", "tool_error"},
		}
		for i, l := range lines {
			w := wants[i]
			for _, k := range []string{"requestId", "principal", "run", "tool", "verdict", "reasonCodes", "reservedUsd", "settledUsd", "upstream", "answer"} {
				if _, ok := l[k]; !ok {
					t.Errorf("line %d lacks %s: %v", i, k, l)
				}
			}
			if id, _ := l["requestId"].(string); id == "" {
				t.Errorf("line %d: no request id", i)
			}
			if l["principal"] != w.principal || l["tool"] != w.tool || l["answer"] != w.answer || l["upstream"] != w.upstream {
				t.Errorf("line %d: %v, want %+v", i, l, w)
			}
			if v, _ := l["verdict"].(string); !strings.HasPrefix(v, w.verdict[:min(len(w.verdict), 5)]) {
				t.Errorf("line %d verdict %q, want %q", i, v, w.verdict)
			}
			settled, _ := l["settledUsd"].(string)
			if w.settled == "" && settled != "" || w.settled != "" && !sameUSD(settled, w.settled) {
				t.Errorf("line %d settledUsd %q, want %q", i, settled, w.settled)
			}
			if codes, _ := l["reasonCodes"].([]any); w.answer == "withheld" && len(codes) == 0 {
				t.Errorf("line %d: a withheld call without reason codes: %v", i, l)
			}
		}
		if lines[5]["requestId"] != "ops-stateless-1" || lines[5]["stateless"] != true || lines[5]["upstreamStatus"] != float64(200) {
			t.Errorf("the stateless call's line: %v", lines[5])
		}
	})

	t.Run("metrics count the mix exactly", func(t *testing.T) {
		text, fams := scrape(t, metricsAddr)
		for _, c := range []struct {
			name   string
			labels map[string]string
			want   float64
		}{
			{"preflight_proxy_tool_calls_total", nil, 6},
			{"preflight_proxy_tool_calls_total", map[string]string{"answer": "ran"}, 4},
			{"preflight_proxy_tool_calls_total", map[string]string{"answer": "reused"}, 1},
			{"preflight_proxy_tool_calls_total", map[string]string{"answer": "withheld", "verdict": "defer"}, 1},
			{"preflight_proxy_principal_tool_calls_total", map[string]string{"principal": "alice"}, 5},
			{"preflight_proxy_principal_tool_calls_total", map[string]string{"principal": "other"}, 1},
			{"preflight_proxy_upstream_duration_seconds", map[string]string{"result": "ok"}, 2},
			{"preflight_proxy_upstream_duration_seconds", map[string]string{"result": "tool_error"}, 2},
			{"preflight_proxy_spent_usd_total", map[string]string{"principal": "alice"}, 0.1},
			{"preflight_proxy_spent_usd_total", map[string]string{"principal": "other"}, 0.1},
		} {
			if got := sum(fams, c.name, c.labels); got != c.want {
				t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
			}
		}
		if strings.Contains(text, `principal="carol"`) {
			t.Error("a principal the file does not name is a label value")
		}
		if fams["preflight_proxy_sessions_open"] == nil || sum(fams, "preflight_proxy_scopes_open", nil) < 2 {
			t.Errorf("sessions open %v, scopes open %v: want the gauges, and at least alice's and carol's runs",
				sum(fams, "preflight_proxy_sessions_open", nil), sum(fams, "preflight_proxy_scopes_open", nil))
		}
		promtool, err := exec.LookPath("promtool")
		if err != nil {
			t.Skip("promtool is not installed")
		}
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = strings.NewReader(text)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics: %v\n%s", err, out)
		}
	})

	t.Run("spans and the trace context carried upstream", func(t *testing.T) {
		if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-d.exited:
		case <-time.After(60 * time.Second):
			t.Fatal("the proxy did not exit")
		}
		recv.mu.Lock()
		defer recv.mu.Unlock()
		if len(recv.bad) > 0 {
			t.Errorf("the receiver refused exports: %q", recv.bad)
		}
		var quotes, tickets int
		var carolSpan *tracepb.Span
		for _, s := range recv.spans {
			if s.service != "proxy-e2e" {
				continue
			}
			switch s.span.Name {
			case "execute_tool " + mcptest.Quote:
				quotes++
				if hex.EncodeToString(s.span.TraceId) == traceID {
					carolSpan = s.span
				}
			case "execute_tool " + mcptest.Ticket:
				tickets++
			}
		}
		if quotes != 4 || tickets != 2 {
			t.Errorf("%d quote spans and %d ticket spans, want 4 and 2", quotes, tickets)
		}
		if carolSpan == nil {
			t.Fatal("no span in the caller's trace")
		}
		if hex.EncodeToString(carolSpan.ParentSpanId) != parentID {
			t.Errorf("parent %x, want %s", carolSpan.ParentSpanId, parentID)
		}
		attrs := map[string]string{}
		for _, kv := range carolSpan.Attributes {
			attrs[kv.Key] = kv.GetValue().GetStringValue()
		}
		for k, v := range map[string]string{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": mcptest.Quote, "mcp.method.name": "tools/call",
			"preflight.principal": "carol", "preflight.decision": "allow", "preflight.settled_usd": attrs["preflight.settled_usd"]} {
			if attrs[k] != v {
				t.Errorf("attribute %s = %q, want %q", k, attrs[k], v)
			}
		}
		want := "00-" + traceID + "-" + hex.EncodeToString(carolSpan.SpanId) + "-01"
		up.mu.Lock()
		defer up.mu.Unlock()
		found := false
		for _, m := range up.metas {
			if m["traceparent"] == want {
				found = true
			}
		}
		if !found {
			t.Errorf("no tools/call reached the upstream with _meta.traceparent %s: %v", want, up.metas)
		}
	})
}
