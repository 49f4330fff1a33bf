package mcpproxy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/mcpguard/mcptest"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestProxyStatelessStdio: a 2026-07-28 go-sdk client in front of an
// upstream without a URL runs the 28-call counted session with the counts
// of a 2025-11-25 client: through a stdio process that serves 2026-07-28
// itself (the stateless requests are forwarded over one shared pipe), and
// through an upstream that speaks only initialize (the bridge initializes
// it once and translates). Either way there is no session and one scope,
// the anonymous principal's default run, and a legacy upstream never sees
// the stateless revision's _meta.
func TestProxyStatelessStdio(t *testing.T) {
	bin := toolServer(t)
	type upstream struct {
		dial   Dialer
		counts func() map[string]int
	}
	for _, up := range []struct {
		name string
		make func(t *testing.T, check bool) upstream
	}{
		{"stdio process", func(t *testing.T, _ bool) upstream {
			countsFile := filepath.Join(t.TempDir(), "counts.json")
			t.Setenv("MCPTEST_COUNTS", countsFile)
			return upstream{CommandDialer(bin), func() map[string]int {
				c, err := mcptest.ReadCounts(countsFile)
				if err != nil {
					t.Fatal(err)
				}
				return c
			}}
		}},
		{"initialize-only upstream", func(t *testing.T, check bool) upstream {
			srv, counts := mcptest.NewServer("")
			return upstream{legacyOnly(t, srv, check), counts.Snapshot}
		}},
	} {
		t.Run(up.name, func(t *testing.T) {
			var tallies []mcptest.Tally
			for _, v := range []string{"2025-11-25", ""} {
				u := up.make(t, v == "")
				p := New(Options{Dial: u.dial, Guard: *mcptest.ScriptGuard()})
				px := httptest.NewServer(p)
				cs := connect(t, px.URL, v)
				if got, want := cs.InitializeResult().ProtocolVersion, map[string]string{"": "2026-07-28"}[v]; want != "" && got != want {
					t.Fatalf("negotiated %q, want %q", got, want)
				}
				tally := mcptest.RunScript(t, cs, u.counts)
				t.Logf("client %q: %+v", v, tally)
				tallies = append(tallies, tally)
				p.mu.Lock()
				sessions, scopes := len(p.sessions), len(p.scopes)
				p.mu.Unlock()
				if v == "" && (sessions != 0 || scopes != 1) {
					t.Errorf("%d sessions and %d scopes, want none and one", sessions, scopes)
				}
				cs.Close()
				p.Close()
				px.Close()
			}
			if !reflect.DeepEqual(tallies[0], tallies[1]) {
				t.Errorf("a 2026-07-28 client's session counted %+v, a 2025-11-25 client's %+v", tallies[1], tallies[0])
			}
		})
	}
}

// legacyOnly dials srv in memory as a server of the initialize handshake
// only: server/discover gets method not found, and a request carrying the
// stateless revision's _meta fails the test, as does an initialize that
// declares capabilities the bridge cannot carry, when check is set (for a
// bridge's connection, not a legacy client's session).
func legacyOnly(t *testing.T, srv *mcp.Server, check bool) Dialer {
	return func(ctx context.Context) (mcp.Connection, error) {
		st, ct := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(ctx, st, nil); err != nil {
			return nil, err
		}
		c, err := ct.Connect(ctx)
		if err != nil {
			return nil, err
		}
		r := &refusing{Connection: c, t: t, check: check, extra: make(chan jsonrpc.Message, 4), msgs: make(chan readResult)}
		go r.pump()
		return r, nil
	}
}

type refusing struct {
	mcp.Connection
	t     *testing.T
	check bool
	extra chan jsonrpc.Message
	msgs  chan readResult
	once  sync.Once
}

func (r *refusing) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok {
		if req.Method == "server/discover" {
			r.extra <- &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found"}}
			return nil
		}
		if strings.Contains(string(req.Params), metaVersion) {
			r.once.Do(func() { r.t.Errorf("the initialize-only upstream got %s with %s", req.Method, req.Params) })
		}
		if req.Method == "initialize" && r.check {
			var p struct {
				Capabilities map[string]json.RawMessage `json:"capabilities"`
			}
			json.Unmarshal(req.Params, &p)
			for _, k := range []string{"sampling", "elicitation", "roots"} {
				if p.Capabilities[k] != nil {
					r.t.Errorf("initialize declares %s, which the bridge cannot carry", k)
				}
			}
		}
	}
	return r.Connection.Write(ctx, msg)
}

func (r *refusing) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-r.extra:
		return m, nil
	case x := <-r.msgs:
		return x.msg, x.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// pump reads the connection for Read.
func (r *refusing) pump() {
	for {
		m, err := r.Connection.Read(context.Background())
		r.msgs <- readResult{m, err}
		if err != nil {
			return
		}
	}
}

// memUpstream dials srv in memory, as a stdio upstream of the 2026-07-28
// revision; it counts the dials and keeps the last connection.
type memUpstream struct {
	srv   *mcp.Server
	dials atomic.Int32
	mu    sync.Mutex
	last  mcp.Connection
}

func (m *memUpstream) dial(ctx context.Context) (mcp.Connection, error) {
	st, ct := mcp.NewInMemoryTransports()
	if _, err := m.srv.Connect(ctx, st, nil); err != nil {
		return nil, err
	}
	c, err := ct.Connect(ctx)
	if err != nil {
		return nil, err
	}
	m.dials.Add(1)
	m.mu.Lock()
	m.last = c
	m.mu.Unlock()
	return c, nil
}

// statelessPost posts one stateless request through the proxy at url and
// returns the JSON-RPC messages of the answer, in order.
func statelessPost(t *testing.T, url, method, name, params string, id int) (int, []map[string]any) {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params)
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var msgs []map[string]any
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if d, ok := strings.CutPrefix(line, "data:"); ok {
			line = d
		} else if !strings.HasPrefix(line, "{") {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("answer line %q: %v", line, err)
		}
		msgs = append(msgs, m)
	}
	return resp.StatusCode, msgs
}

const statelessMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":"tok"}`

// TestProxyBridgeRemapsIDs: stateless requests of different clients that
// share the JSON-RPC id and progress token go over the bridge's one
// upstream connection, and each gets its own progress notifications and
// result under its own id and token.
func TestProxyBridgeRemapsIDs(t *testing.T) {
	srv, _ := mcptest.NewServer("")
	up := &memUpstream{srv: srv}
	url, _ := startProxy(t, up.dial, *mcptest.ScriptGuard())
	var wg sync.WaitGroup
	for _, n := range []int{2, 3, 4} {
		wg.Go(func() {
			status, msgs := statelessPost(t, url, "tools/call", mcptest.Countdown,
				fmt.Sprintf(`{"name":%q,"arguments":{"n":%d},%s}`, mcptest.Countdown, n, statelessMeta), 1)
			var progress int
			for _, m := range msgs[:len(msgs)-1] {
				p, _ := m["params"].(map[string]any)
				if m["method"] != "notifications/progress" || p["progressToken"] != "tok" || p["total"] != float64(n) {
					t.Errorf("countdown %d: notification %v, want its own progress under token tok", n, m)
				}
				progress++
			}
			last := msgs[len(msgs)-1]
			if status != http.StatusOK || last["id"] != float64(1) || last["result"] == nil || progress != n {
				t.Errorf("countdown %d: HTTP %d, %d progress notifications, answer %v; want 200, %d and the result for id 1", n, status, progress, last, n)
			}
		})
	}
	wg.Wait()
	if n := up.dials.Load(); n != 1 {
		t.Errorf("%d upstream connections, want 1 shared by the stateless requests", n)
	}
}

// TestProxyBridgeConnectionEnds: when the bridge's upstream connection
// ends during a call of a side-effecting tool, the call's outcome is
// unknown: its repeat is withheld, not run again; the next request dials
// a new connection.
func TestProxyBridgeConnectionEnds(t *testing.T) {
	srv, counts := mcptest.NewServer("")
	up := &memUpstream{srv: srv}
	g := *mcptest.ScriptGuard()
	g.Specs = append(g.Specs, tools.Spec{Operation: preflight.Operation{Name: mcptest.Countdown, Effects: preflight.EffectsSideEffecting}})
	url, _ := startProxy(t, up.dial, g)
	call := fmt.Sprintf(`{"name":%q,"arguments":{"n":0},%s}`, mcptest.Countdown, statelessMeta)
	done := make(chan []map[string]any, 1)
	go func() {
		_, msgs := statelessPost(t, url, "tools/call", mcptest.Countdown, call, 1)
		done <- msgs
	}()
	waitFor(t, "the call to run upstream", func() bool { return counts.Get(mcptest.Countdown) == 1 })
	up.mu.Lock()
	up.last.Close() // as when a process exits: the bridge reads no more
	up.mu.Unlock()
	first := <-done
	if len(first) != 1 || first[0]["error"] == nil {
		t.Fatalf("the call whose connection ended: %v; want one JSON-RPC error", first)
	}
	_, again := statelessPost(t, url, "tools/call", mcptest.Countdown, call, 2)
	res, _ := again[len(again)-1]["result"].(map[string]any)
	if text := fmt.Sprint(res["content"]); !strings.Contains(text, "is unknown") {
		t.Errorf("the repeat: %v; want it withheld, its first's outcome unknown", again)
	}
	_, quote := statelessPost(t, url, "tools/call", mcptest.Quote,
		fmt.Sprintf(`{"name":%q,"arguments":{"symbol":"ACME"},%s}`, mcptest.Quote, statelessMeta), 3)
	if res, _ := quote[len(quote)-1]["result"].(map[string]any); res == nil || res["isError"] == true {
		t.Errorf("a call after the connection ended: %v; want it run", quote)
	}
	if n := counts.Get(mcptest.Countdown); n != 1 {
		t.Errorf("countdown ran %d times, want 1", n)
	}
	if n := up.dials.Load(); n != 2 {
		t.Errorf("%d upstream connections, want 2", n)
	}
}

// TestSamePrimitiveIntegers: a header matches an integer argument when it
// spells the same value; a spelling long enough for strconv.ParseFloat
// to misread (past 800 digits) never matches.
func TestSamePrimitiveIntegers(t *testing.T) {
	for _, tt := range []struct {
		header string
		arg    int64
		same   bool
	}{
		{"1", 1, true}, {"1.0", 1, true}, {"-7", -7, true}, {"2", 1, false},
		{"1" + strings.Repeat("0", 800) + "e-799", 1, false}, // 10, which ParseFloat reads as 1
		{"1" + strings.Repeat("0", 800) + "e-799", 10, false},
	} {
		if got := samePrimitive(tt.header, tt.arg); got != tt.same {
			t.Errorf("samePrimitive(%.20s…, %d) = %t, want %t", tt.header, tt.arg, got, tt.same)
		}
	}
}
