package mcpguard

import (
	"context"
	"encoding/json"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServerMiddlewareStoreBound runs 40 sessions through one Server
// middleware with no Store configured, each saving 2 MiB of results
// (8 × 256 KiB), the first one 5 MiB. Before, every session had its own
// 16 MiB store and all 83 MiB stayed held; now one store holds at most its
// 64 MiB, each session at most its 4 MiB quota, and a session that ends
// leaves nothing. (Under -race everything is a sixteenth the size.)
func TestServerMiddlewareStoreBound(t *testing.T) {
	const (
		sessions   = 40
		calls      = 8  // by every session but the first
		firstCalls = 20 // by the first: more than its quota
	)
	// The store's bound and one result's size. Under the race detector,
	// which makes moving 83 MiB of JSON take half a minute, a store of a
	// sixteenth of the default size, given explicitly, and results of a
	// sixteenth of the size.
	var (
		opts  *Options
		bound = tools.DefaultSharedBytes
		size  = 256 << 10
	)
	if raceEnabled() {
		bound, size = bound/16, size/16
		opts = &Options{Results: tools.NewSharedResultStore(&tools.SharedResultStoreOptions{MaxBytes: bound})}
	}
	quota := bound / 16
	ctx := context.Background()
	g := newGuard(opts)
	store := g.opts.Results.(*tools.SharedResultStore)
	srv := mcp.NewServer(&mcp.Implementation{Name: "big", Version: "1"}, nil)
	var runs atomic.Int64
	srv.AddTool(&mcp.Tool{
		Name:        "fetch",
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		runs.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", size)}}}, nil
	})
	srv.AddReceivingMiddleware(serverMiddleware(g))

	var css []*mcp.ClientSession
	maxBytes := 0
	for i := range sessions {
		st, ct := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ss.Close()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		css = append(css, cs)
		n := calls
		if i == 0 {
			n = firstCalls
		}
		for j := range n {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fetch", Arguments: map[string]any{"session": i, "call": j}})
			if err != nil || res.IsError {
				t.Fatalf("session %d call %d: %v %v", i, j, err, res)
			}
			_, b := store.Len()
			maxBytes = max(maxBytes, b)
		}
		if _, b := store.Len(); i == 0 && (b > quota || b < quota*3/4) {
			// Only session 0 saved so far: the store's bytes are its own.
			t.Fatalf("session 0 holds %d bytes; its quota is %d", b, quota)
		}
	}
	wantRuns := int64(firstCalls + (sessions-1)*calls)
	if got := runs.Load(); got != wantRuns {
		t.Fatalf("%d runs, want %d", got, wantRuns)
	}
	entries, bytes := store.Len()
	t.Logf("40 sessions hold %d results, %d bytes (at most %d on the way); %d bytes saved in all", entries, bytes, maxBytes, wantRuns*int64(size+100))
	if maxBytes > bound {
		t.Errorf("the store held %d bytes, over its bound of %d", maxBytes, bound)
	}
	if bytes < bound*9/10 {
		t.Errorf("the store holds %d bytes: it should fill up to its bound of %d", bytes, bound)
	}

	// A session keeps its saved results while it lasts: the first one's
	// call is reused.
	if _, err := css[0].CallTool(ctx, &mcp.CallToolParams{Name: "fetch", Arguments: map[string]any{"session": 0, "call": firstCalls - 1}}); err != nil {
		t.Fatal(err)
	}
	if got := runs.Load(); got != wantRuns {
		t.Errorf("session 0's saved call ran again (%d runs)", got)
	}

	// Sessions that end drop their results.
	for _, cs := range css {
		cs.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if n, b := store.Len(); n == 0 && b == 0 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("every session ended, the store still holds %d results, %d bytes", n, b)
		}
		time.Sleep(time.Millisecond) // the guard learns of a session's end in a goroutine
	}
}

// raceEnabled reports whether the test binary was built with -race.
func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}
