package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentpreflight/preflight/benchmarks/load"
)

// The -mcp-proxy mode measures `preflightd proxy` in front of the MCP test
// tools (agent/mcpguard/mcptest, served over Streamable HTTP by its own process):
// the same clients and calls first straight to the tools, then through the
// proxy. Every client is one MCP session (initialize, then tools/call in a
// loop). The calls of a session: a market_quote of a symbol never asked
// before (run: the proxy decides and forwards), a repeat of the session's
// first quote (reuse: the proxy answers with the saved result, byte for
// byte the previous answer for that symbol, or runs the call again once
// the session's ledger of at most 100 entries has let the earlier success
// go; the report counts both), and a quote with an empty symbol
// (withheld: arguments that break the tool's schema; through the proxy
// the answer must be an isError result starting "not run: "). Mix: 6 run,
// 3 reuse, 1 withheld.

// mcpTarget is one side of the comparison.
type mcpTarget struct {
	name  string
	url   string
	proxy bool
}

// runProxyLoad is the -mcp-proxy mode of the program.
func runProxyLoad(ctx context.Context, o options, out io.Writer) error {
	dir, err := os.MkdirTemp("", "loadtest")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := o.bin
	if bin == "" {
		if bin, err = buildServer(ctx, dir); err != nil {
			return err
		}
	}
	tools, err := buildRootCommand(ctx, dir, "toolserver", "./agent/mcpguard/mcptest/toolserver")
	if err != nil {
		return err
	}
	up, err := startServer(ctx, tools, "-http", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("tool server: %w", err)
	}
	defer up.kill()
	proxy, err := startServer(ctx, bin, "proxy", "--listen", "127.0.0.1:0", "--upstream", "http://"+up.addr+"/mcp")
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	defer proxy.kill()

	half := o
	half.duration = o.duration / 2
	half.warmup = half.duration / 5
	direct := driveMCP(ctx, mcpTarget{"direct", "http://" + up.addr + "/mcp", false}, half)
	sampler := newMemSampler(proxy.pid(), half.warmup)
	go sampler.run()
	proxied := driveMCP(ctx, mcpTarget{"proxied", "http://" + proxy.addr + "/mcp", true}, half)
	sampler.stop()
	exitErr := proxy.stop()

	text := proxyReport(o, direct, proxied, sampler.result(), exitErr)
	fmt.Fprint(out, text)
	if o.out != "" {
		if err := os.WriteFile(o.out, []byte(text), 0o644); err != nil {
			return err
		}
	}
	for _, r := range []*result{direct, proxied} {
		if r.fivexx+r.connErrs+r.wrong > 0 {
			return fmt.Errorf("%d 5xx, %d connection errors, %d wrong answers", r.fivexx, r.connErrs, r.wrong)
		}
	}
	return exitErr
}

// driveMCP runs o.clients sessions against t for o.duration.
func driveMCP(ctx context.Context, t mcpTarget, o options) *result {
	res := runClients(ctx, o, func(ctx context.Context, client *http.Client, w int) *result {
		return mcpSession(ctx, client, t, w)
	})
	for k, ks := range res.kinds {
		if !strings.Contains(k, "(") { // the reuse breakdown counts calls already counted
			res.all = append(res.all, ks.latencies...)
		}
	}
	return res
}

// mcpSession is one client: one session, calls until ctx ends.
func mcpSession(ctx context.Context, c *http.Client, t mcpTarget, w int) *result {
	local := &result{byStatus: map[int]int64{}, kinds: map[string]*kindStats{}}
	status, msg, sid, err := rpc(ctx, c, t.url, "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"loadtest","version":"1"}}}`)
	if err != nil || status != 200 || sid == "" {
		local.connErrs++
		local.note(fmt.Sprintf("%s: initialize: status %d, %v, %s", t.name, status, err, msg))
		return local
	}
	rpc(ctx, c, t.url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	var first []byte // the latest answer for the session's first quote
	for i := 1; ctx.Err() == nil; i++ {
		kind, symbol := "run", fmt.Sprintf("W%dN%d", w, i)
		switch i % 10 {
		case 1, 4, 7:
			if first != nil {
				kind, symbol = "reuse", fmt.Sprintf("W%dN1", w)
			}
		case 9:
			kind, symbol = "withheld", ""
		}
		body := `{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"tools/call","params":{"name":"market_quote","arguments":{"symbol":"` + symbol + `"}}}`
		t0 := time.Now()
		status, msg, _, err := rpc(ctx, c, t.url, sid, body)
		lat := time.Since(t0)
		if err != nil && ctx.Err() != nil {
			break
		}
		local.total++
		ks := local.kinds[t.name+" "+kind]
		if ks == nil {
			ks = &kindStats{}
			local.kinds[t.name+" "+kind] = ks
		}
		ks.count++
		ks.latencies = append(ks.latencies, lat)
		if err != nil {
			local.connErrs++
			local.note(t.name + " " + kind + ": " + err.Error())
			continue
		}
		local.byStatus[status]++
		if status >= 500 {
			local.fivexx++
		}
		result := rpcResult(msg)
		if problem := checkMCP(t, kind, symbol, result, first); problem != "" {
			local.wrong++
			local.note(t.name + " " + kind + ": " + problem)
		}
		if kind == "reuse" && t.proxy {
			how := "reuse (saved result)"
			if !bytes.Equal(result, first) {
				how = "reuse (ran again)"
			}
			hs := local.kinds[t.name+" "+how]
			if hs == nil {
				hs = &kindStats{}
				local.kinds[t.name+" "+how] = hs
			}
			hs.count++
			hs.latencies = append(hs.latencies, lat)
		}
		if i == 1 || kind == "reuse" {
			first = result
		}
	}
	return local
}

// checkMCP says what is wrong with a tools/call result, or "".
func checkMCP(t mcpTarget, kind, symbol string, result, first []byte) string {
	switch {
	case result == nil:
		return "no result"
	case kind == "withheld" && t.proxy:
		if !bytes.Contains(result, []byte(`"isError":true`)) || !bytes.Contains(result, []byte(`"text":"not run: `)) {
			return "not a withheld result: " + string(result)
		}
	case kind == "withheld":
		// The tool itself accepts an empty symbol: any result will do.
	case kind == "reuse" && t.proxy && bytes.Equal(result, first):
		// the saved result
	case !bytes.Contains(result, []byte(`\"symbol\":\"`+symbol+`\"`)):
		return "the result is not for " + symbol + ": " + string(result)
	}
	return ""
}

// rpc posts one JSON-RPC message and returns the status, the response
// message (from a JSON body or the first SSE event that carries an id) and
// the session id the answer names.
func rpc(ctx context.Context, c *http.Client, url, sid, body string) (int, []byte, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, nil, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	if sid == "" {
		sid = resp.Header.Get("Mcp-Session-Id")
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, b, sid, err
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		if data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok && bytes.Contains(data, []byte(`"id":`)) {
			return resp.StatusCode, append([]byte(nil), data...), sid, nil
		}
	}
	return resp.StatusCode, nil, sid, sc.Err()
}

// rpcResult returns the "result" member of a JSON-RPC response, or nil.
func rpcResult(msg []byte) []byte {
	var m struct {
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(msg, &m) != nil {
		return nil
	}
	return m.Result
}

// proxyReport writes the -mcp-proxy report as Markdown.
func proxyReport(o options, direct, proxied *result, mem memResult, exitErr error) string {
	var b strings.Builder
	m := describeMachine()
	fmt.Fprintf(&b, "# preflightd proxy load test\n\n")
	fmt.Fprintf(&b, "Generated by `go run ./cmd/loadtest -mcp-proxy -duration %v -clients %d` (in benchmarks/) on %s.\n\n", o.duration, o.clients, m.when)
	fmt.Fprintf(&b, "Machine: %d CPUs (%s), %s/%s, %s. Load average at the end: %s. Clients, proxy and tool server share the CPUs.\n\n",
		m.cpus, orUnknown(m.model), m.os, m.arch, m.goVersion, orUnknown(m.loadStart))
	fmt.Fprintf(&b, "Each client is one MCP session over Streamable HTTP calling `market_quote` of agent/mcpguard/mcptest: run = a new symbol, reuse = the session's first symbol again, withheld = an empty symbol (the proxy answers `not run: …`). Half of -duration goes straight to the tool server, half through the proxy.\n\n")
	fmt.Fprintf(&b, "The proxied reuse calls are also split by how they were answered: with the saved result (byte for byte the previous answer), or by running again after the session's 100-entry ledger let the earlier success go; those two rows are a breakdown, not more calls.\n\n")
	fmt.Fprintf(&b, "| path | calls | calls/s | p50 | p99 | wrong | 5xx | conn errors |\n|---|---|---|---|---|---|---|---|\n")
	for _, side := range []struct {
		name string
		r    *result
	}{{"direct", direct}, {"proxied", proxied}} {
		keys := make([]string, 0, len(side.r.kinds))
		for k := range side.r.kinds {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			ks := side.r.kinds[k]
			fmt.Fprintf(&b, "| %s | %d | | %s | %s | | | |\n", k, ks.count, ms(load.Percentile(ks.latencies, 50)), ms(load.Percentile(ks.latencies, 99)))
		}
		fmt.Fprintf(&b, "| **%s, all** | %d | %.0f | %s | %s | %d | %d | %d |\n", side.name, side.r.total, float64(side.r.total)/side.r.elapsed.Seconds(),
			ms(load.Percentile(side.r.all, 50)), ms(load.Percentile(side.r.all, 99)), side.r.wrong, side.r.fivexx, side.r.connErrs)
	}
	if mem.ok {
		fmt.Fprintf(&b, "\nProxy RSS: %s after warm-up, %s at the end, peak %s.\n", mib(mem.warmRSS), mib(mem.endRSS), mib(mem.peak))
	}
	exit := "clean (SIGTERM, exit 0)"
	if exitErr != nil {
		exit = exitErr.Error()
	}
	fmt.Fprintf(&b, "Proxy shutdown: %s.\n", exit)
	for _, r := range []*result{direct, proxied} {
		for _, p := range r.firstBad {
			fmt.Fprintf(&b, "- %s\n", strings.ReplaceAll(p, "\n", " "))
		}
	}
	return b.String()
}
