package mcpproxy

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/agentpreflight/preflight/agent/mcpguard/mcptest"
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
