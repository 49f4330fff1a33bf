package mcpproxy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/agentpreflight/preflight/agent/pgledger"
	"github.com/agentpreflight/preflight/agent/redisledger"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/agentpreflight/preflight/server/internal/sharedstate"
	"github.com/agentpreflight/preflight/server/internal/testpart"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"
)

// The replica tests run two Proxy instances, each with its own guards, on
// one real redis-server (Debian's redis-server package) through --store's
// sharedstate, in front of one upstream that counts its executions, and
// drive them with go-sdk clients of the 2026-07-28 revision that send a
// run handle in _meta.

// pgSpent reads what principal's run has spent, from PostgreSQL.
func pgSpent(t *testing.T, url, principal, run string) (string, int) {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	l, err := pgledger.New(ctx, pool, sharedstate.ScopeName(principal, "run:"+run), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	st, err := l.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return string(st.Balance.SpentUSD), st.Balance.Calls
}

// replica serves a proxy whose scopes keep their state in store.
func replica(t *testing.T, up *scopeUpstream, store *sharedstate.Store, g mcpguard.Options, callTimeout time.Duration) (string, *Proxy) {
	t.Helper()
	p := New(Options{Dial: HTTPDialer(up.url, nil), UpstreamURL: up.url, Guard: g, CallTimeout: callTimeout,
		ScopeState: func(principal, run string, o *mcpguard.Options) (func(), error) {
			sc, err := store.Scope(principal, run)
			if err != nil {
				return nil, err
			}
			o.LedgerStore, o.Results, o.Claims = sc.Ledger, sc.Results, sc.Claims
			return sc.Close, nil
		}})
	px := httptest.NewServer(asPrincipal(p))
	t.Cleanup(func() { p.Close(); px.Close() })
	return px.URL, p
}

// client connects a 2026-07-28 go-sdk client to url as principal.
func client(t *testing.T, url, principal string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "replica-test", Version: "1"}, nil)
	hc := &http.Client{Transport: headers{"X-Test-Principal": principal}}
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// callIn calls tool with args in run, and returns the text of the result
// (a withheld call's too).
func callIn(ctx context.Context, cs *mcp.ClientSession, run, tool string, args map[string]any) (string, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args, Meta: mcp.Meta{RunMetaKey: run}})
	if err != nil {
		return "", err
	}
	if len(res.Content) == 0 {
		return "", fmt.Errorf("a result without content: %+v", res)
	}
	return res.Content[0].(*mcp.TextContent).Text, nil
}

// redisSpent reads what principal's run has spent, from Redis.
func redisSpent(t *testing.T, url, principal, run string) (string, int) {
	t.Helper()
	opt, _ := redis.ParseURL(url)
	opt.ContextTimeoutEnabled = true
	c := redis.NewClient(opt)
	defer c.Close()
	return ledgerSpent(t, c, principal, run)
}

// ledgerSpent reads what principal's run has spent, through c.
func ledgerSpent(t *testing.T, c redis.UniversalClient, principal, run string) (string, int) {
	t.Helper()
	l, err := redisledger.New(c, sharedstate.ScopeName(principal, "run:"+run), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	st, err := l.State(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return string(st.Balance.SpentUSD), st.Balance.Calls
}

// TestReplicasShareOneRedis: two proxy replicas on one Redis spend one
// budget per run, never run one call twice, answer a re-issued call on
// either replica with the first result, and keep principals apart.
func TestReplicasShareOneRedis(t *testing.T) {
	url := "redis://" + testpart.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	testReplicas(t, url, func(principal, run string) (string, int) { return redisSpent(t, url, principal, run) })
}

// TestReplicasShareOneRedisCluster is TestReplicasShareOneRedis on a
// Redis Cluster of three primaries (--store redis+cluster://…).
func TestReplicasShareOneRedisCluster(t *testing.T) {
	addrs := testpart.StartRedisCluster(t, "--appendonly", "yes", "--appendfsync", "always")
	url := "redis+cluster://" + addrs[0] + "?addr=" + addrs[1] + "&addr=" + addrs[2]
	testReplicas(t, url, func(principal, run string) (string, int) {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ContextTimeoutEnabled: true})
		defer c.Close()
		return ledgerSpent(t, c, principal, run)
	})
}

// TestReplicasShareOnePostgres is TestReplicasShareOneRedis on
// PostgreSQL.
func TestReplicasShareOnePostgres(t *testing.T) {
	url := testpart.StartPostgres(t)
	testReplicas(t, url, func(principal, run string) (string, int) { return pgSpent(t, url, principal, run) })
}

// testReplicas runs the replica tests on the store at url; spentIn reads
// what principal's run has spent there, and its calls.
func testReplicas(t *testing.T, url string, spentIn func(principal, run string) (string, int)) {
	ctx := context.Background()
	store, err := sharedstate.Open(ctx, url, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	up := newScopeUpstream(t)
	g := mcpguard.Options{BudgetUSD: "1", Specs: []tools.Spec{{Operation: preflight.Operation{Name: "send"}, PriceUSD: "0.07"},
		{Operation: preflight.Operation{Name: "approve"}, PriceUSD: "0.25"}}}
	a, pa := replica(t, up, store, g, 0)
	b, _ := replica(t, up, store, g, 0)
	c, _ := replica(t, up, store, g, 3*time.Second) // gives up on a call after 3 s
	// drain empties the upstream's buffer of started sends, so that it
	// never fills.
	drain := func() {
		for {
			select {
			case <-up.sendStarted:
			default:
				return
			}
		}
	}

	t.Run("one budget", func(t *testing.T) {
		// 40 distinct sends at once, 20 through each replica, in one run
		// with a budget of 1 at 0.07 each: 14 fit.
		ca, cb := client(t, a, "alice"), client(t, b, "alice")
		before := up.send.Load()
		stop := make(chan struct{})
		go func() { // the upstream's buffer of started sends never fills
			for {
				select {
				case <-up.sendStarted:
				case <-stop:
					return
				}
			}
		}()
		var wg sync.WaitGroup
		errs := make(chan error, 40)
		for i := range 40 {
			cs := ca
			if i%2 == 1 {
				cs = cb
			}
			wg.Go(func() {
				if _, err := callIn(ctx, cs, "budget", "send", map[string]any{"to": fmt.Sprint("n", i)}); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(stop)
		close(errs)
		for err := range errs {
			t.Errorf("call: %v", err)
		}
		ran := up.send.Load() - before
		spent, calls := spentIn("alice", "budget")
		t.Logf("40 calls through 2 replicas, budget 1, price 0.07: %d executions, %s spent, %d calls counted", ran, spent, calls)
		if ran != 14 || spent != "0.98" {
			t.Fatalf("%d executions and %s spent, want 14 and 0.98 (the budget shared by both replicas)", ran, spent)
		}
		// The run ends on replica a (as after its idle timeout) and starts
		// again there: its money is the store's, not reset.
		pa.mu.Lock()
		scopes := maps.Clone(pa.scopes)
		pa.mu.Unlock()
		for k, sc := range scopes {
			pa.endScope(k, sc, "test")
		}
		if n := pa.Scopes(); n != 0 {
			t.Fatalf("%d scopes left on replica a", n)
		}
		if _, err := callIn(ctx, client(t, a, "alice"), "budget", "send", map[string]any{"to": "after"}); err != nil {
			t.Fatal(err)
		}
		if n := up.send.Load() - before; n != 14 {
			t.Fatalf("%d executions after the run restarted on replica a, want still 14: the budget was reset", n)
		}
		if spent, _ := spentIn("alice", "budget"); spent != "0.98" {
			t.Fatalf("%s spent after the run restarted on replica a, want still 0.98", spent)
		}
	})

	t.Run("no double execution", func(t *testing.T) {
		ca, cb := client(t, a, "alice"), client(t, b, "alice")
		drain()
		before := up.send.Load()
		args := map[string]any{"to": "bank", "wait": true}
		var release sync.Once
		defer release.Do(func() { close(up.release) }) // a failing test leaves no call waiting
		first := make(chan string, 1)
		go func() {
			text, err := callIn(ctx, ca, "once", "send", args)
			if err != nil {
				text = "error: " + err.Error()
			}
			first <- text
		}()
		<-up.sendStarted // replica a runs it
		// The same call re-issued to replica b (a new JSON-RPC id) while
		// a runs it waits for a's result.
		second := make(chan string, 1)
		go func() {
			text, err := callIn(ctx, cb, "once", "send", args)
			if err != nil {
				text = "error: " + err.Error()
			}
			second <- text
		}()
		// Replica c, whose calls time out after 3 s, answers with a
		// retryable error once it stops waiting, and does not run it.
		since := time.Now()
		_, err := callIn(ctx, client(t, c, "alice"), "once", "send", args)
		waited := time.Since(since)
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != mcpguard.CodeRunningElsewhere || !strings.Contains(err.Error(), "in flight in another process") {
			t.Fatalf("replica c: %v, want the retryable error of a call in flight elsewhere", err)
		}
		t.Logf("replica c answered after %v: %v", waited.Round(time.Millisecond), err)
		if n := up.send.Load() - before; n != 1 {
			t.Fatalf("%d executions while the first runs, want 1", n)
		}
		release.Do(func() { close(up.release) })
		x, y := <-first, <-second
		want := fmt.Sprintf("sent to bank (execution %d)", before+1)
		if x != want || y != want {
			t.Fatalf("replica a answered %q and replica b %q, want both %q", x, y, want)
		}
		// After it completed, within the idempotency window, either
		// replica answers a repeat with the first result.
		for _, cs := range []*mcp.ClientSession{cb, ca, cb} {
			if got, err := callIn(ctx, cs, "once", "send", args); err != nil || got != want {
				t.Fatalf("repeat after completion: %q %v, want %q", got, err, want)
			}
		}
		if n := up.send.Load() - before; n != 1 {
			t.Fatalf("%d executions of one call through 2 replicas, want 1", n)
		}
		spent, _ := spentIn("alice", "once")
		if spent != "0.07" {
			t.Fatalf("the run spent %s, want 0.07 (one execution)", spent)
		}
	})

	t.Run("concurrent repeats", func(t *testing.T) {
		// 20 identical sends at once, 10 through each replica, each with
		// its own JSON-RPC id: one execution, one answer.
		ca, cb := client(t, a, "alice"), client(t, b, "alice")
		drain()
		before := up.send.Load()
		answers := make(chan string, 20)
		var wg sync.WaitGroup
		for i := range 20 {
			cs := ca
			if i%2 == 1 {
				cs = cb
			}
			wg.Go(func() {
				text, err := callIn(ctx, cs, "burst", "send", map[string]any{"to": "burst"})
				if err != nil {
					text = "error: " + err.Error()
				}
				answers <- text
			})
		}
		wg.Wait()
		close(answers)
		seen := map[string]int{}
		for text := range answers {
			seen[text]++
		}
		ran := up.send.Load() - before
		t.Logf("20 identical calls at once through 2 replicas: %d execution(s), answers %v", ran, seen)
		want := fmt.Sprintf("sent to burst (execution %d)", before+1)
		if ran != 1 || len(seen) != 1 || seen[want] != 20 {
			t.Fatalf("%d executions, answers %v: want 1 execution and %q 20 times", ran, seen, want)
		}
	})

	t.Run("input_required across replicas", func(t *testing.T) {
		// A load balancer that is not sticky: the first tools/call goes
		// to replica a, the client's retry to b, the next retry to a.
		var calls atomic.Int64
		ua, ub := mustURL(t, a), mustURL(t, b)
		var via []string
		var viaMu sync.Mutex
		lb := httptest.NewServer(&httputil.ReverseProxy{FlushInterval: -1, Rewrite: func(r *httputil.ProxyRequest) {
			i := 0
			if r.In.Header.Get("Mcp-Method") == "tools/call" {
				i = int(calls.Add(1)-1) % 2
				viaMu.Lock()
				via = append(via, "ab"[i:i+1])
				viaMu.Unlock()
			}
			if i == 0 {
				r.SetURL(ua)
			} else {
				r.SetURL(ub)
			}
			r.Out.Host = r.In.Host
		}})
		defer lb.Close()
		var asked atomic.Int64
		cl := mcp.NewClient(&mcp.Implementation{Name: "mrtr", Version: "1"}, &mcp.ClientOptions{
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked.Add(1)
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
			},
		})
		cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: lb.URL,
			HTTPClient: &http.Client{Transport: headers{"X-Test-Principal": "alice"}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		before := up.approves.Load()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "approve", Arguments: map[string]any{"what": "wire"}, Meta: mcp.Meta{RunMetaKey: "mrtr"}})
		if err != nil || res.IsError || len(res.Content) == 0 || res.Content[0].(*mcp.TextContent).Text != "approved wire" {
			t.Fatalf("approve: %v %+v", err, res)
		}
		ran := up.approves.Load() - before
		viaMu.Lock()
		route := strings.Join(via, "")
		viaMu.Unlock()
		spent, counted := spentIn("alice", "mrtr")
		t.Logf("a 3-round call routed %s: %d elicitations, %d upstream rounds, %s spent, %d call(s) counted", route, asked.Load(), ran, spent, counted)
		if route != "aba" || asked.Load() != 2 || ran != 3 || spent != "0.25" || counted != 1 {
			t.Fatalf("routed %s, %d elicitations, %d upstream rounds, %s spent, %d calls counted; want aba, 2, 3, 0.25 and 1",
				route, asked.Load(), ran, spent, counted)
		}
		// Replica b took the continuation from a: when a's scopes end,
		// nothing is charged or given back twice.
		pa.mu.Lock()
		scopes := maps.Clone(pa.scopes)
		pa.mu.Unlock()
		for k, sc := range scopes {
			pa.endScope(k, sc, "test")
		}
		if spent, counted := spentIn("alice", "mrtr"); spent != "0.25" || counted != 1 {
			t.Fatalf("after replica a's scopes ended: %s spent, %d calls, want 0.25 and 1", spent, counted)
		}
	})

	t.Run("principals apart", func(t *testing.T) {
		alice, bob := client(t, a, "alice"), client(t, b, "bob")
		aliceB := client(t, b, "alice")
		before := up.lookup.Load()
		got, err := callIn(ctx, alice, "shared", "lookup", map[string]any{"q": "k"})
		wantA := fmt.Sprintf("k: execution %d", before+1)
		if err != nil || got != wantA {
			t.Fatalf("alice on a: %q %v, want %q", got, err, wantA)
		}
		// Alice's saved result is reused on the other replica...
		if got, err := callIn(ctx, aliceB, "shared", "lookup", map[string]any{"q": "k"}); err != nil || got != wantA {
			t.Fatalf("alice on b: %q %v, want her saved %q", got, err, wantA)
		}
		// ... and never given to bob, with the same run handle and call.
		wantB := fmt.Sprintf("k: execution %d", before+2)
		if got, err := callIn(ctx, bob, "shared", "lookup", map[string]any{"q": "k"}); err != nil || got != wantB {
			t.Fatalf("bob on b: %q %v, want a run of his own %q", got, err, wantB)
		}
		// Nor a completed call's answer: bob's send runs, alice's repeat
		// does not.
		drain()
		sends := up.send.Load()
		x, err := callIn(ctx, bob, "shared", "send", map[string]any{"to": "p"})
		if err != nil {
			t.Fatal(err)
		}
		y, err := callIn(ctx, alice, "shared", "send", map[string]any{"to": "p"})
		if err != nil || x == y {
			t.Fatalf("bob got %q and alice %q (%v): want two executions", x, y, err)
		}
		if z, err := callIn(ctx, aliceB, "shared", "send", map[string]any{"to": "p"}); err != nil || z != y {
			t.Fatalf("alice's repeat on b: %q %v, want her own %q", z, err, y)
		}
		if n := up.send.Load() - sends; n != 2 {
			t.Fatalf("%d executions, want 2 (one per principal)", n)
		}
	})
}

// mustURL parses raw.
func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
