package mcpproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestUnusableInputSchemaLogged: a listed tool whose inputSchema the guard
// cannot use (here a $ref to another document, which is never fetched)
// is named in a warning of the proxy's log, with the reason and the scope,
// instead of being left unchecked without notice.
func TestUnusableInputSchemaLogged(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "remote-ref", Version: "1.0.0"}, nil)
	srv.AddTool(&mcp.Tool{
		Name:        "lookup",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"$ref":"https://example.com/id.json"}}}`),
	}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(up.Close)

	var buf bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewJSONHandler(writerFunc(func(b []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(b)
	}), nil))
	url, _ := serveProxy(t, Options{Dial: HTTPDialer(up.URL, nil), Logger: log})
	cs := connect(t, url, "2025-11-25")
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the warning", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(buf.String(), "inputSchema cannot be used")
	})
	mu.Lock()
	defer mu.Unlock()
	for _, line := range strings.Split(buf.String(), "\n") {
		if !strings.Contains(line, "inputSchema cannot be used") {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if rec["level"] != "WARN" || rec["tool"] != "lookup" || !strings.Contains(rec["reason"].(string), "https://example.com/id.json") || rec["principal"] == nil {
			t.Errorf("warning %s: want level WARN, tool lookup, the reference in the reason and the scope", line)
		}
		return
	}
}
