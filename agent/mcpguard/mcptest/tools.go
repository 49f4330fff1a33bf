// Package mcptest is a real MCP server of test tools, for the tests of the
// MCP guard (agent/mcpguard), of proxies in front of MCP servers and of
// framework adapters that speak MCP, in the manner of net/http/httptest:
// a paid-like read-only quote, a ticket tool that always fails
// terminally, a flaky read-only search that fails transiently on the
// first call of each query, a countdown that reports progress and a tool
// with an oversized result. Each tool counts its executions, so tests
// assert what really ran. It also holds a scripted session to drive a
// guarded client through (RunScript), tools/call params as attackers send
// them (ParamsCases) and a reader that asks a real MCP server how it reads
// them (ParamsReader).
//
// Command toolserver (agent/mcpguard/mcptest/toolserver) serves the same
// tools over stdio or Streamable HTTP, for tests that need a separate
// process.
//
// mcptest is for tests: its tools return made-up data and reach nothing
// outside the process but the counts file NewServer may be given.
package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tools' names.
const (
	Quote  = "market_quote"
	Ticket = "create_ticket"
	Flaky  = "flaky_search"
	// Countdown reports progress, and with n 0 waits for cancellation
	// (counted as "countdown cancelled").
	Countdown = "countdown"
	// Big answers with a text result of mb MiB (at most 512), for tests of
	// a proxy's bound on results.
	Big = "big_result"
)

// SlowSymbol makes market_quote take SlowFor, long enough for identical
// calls to pile up behind it.
const (
	SlowSymbol = "SLOW"
	SlowFor    = 400 * time.Millisecond
)

// Counters counts the executions of each tool, by tool and by raw
// arguments. It is safe for concurrent use.
type Counters struct {
	mu   sync.Mutex
	file string         // when set, every change is written there as JSON
	By   map[string]int `json:"by"`   // tool name → executions
	Args map[string]int `json:"args"` // tool name + " " + arguments → executions
}

// Snapshot returns a copy of the per-tool counts.
func (c *Counters) Snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.By))
	for k, v := range c.By {
		out[k] = v
	}
	return out
}

func (c *Counters) add(tool string, args json.RawMessage) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.By[tool]++
	c.Args[tool+" "+string(args)]++
	n := c.Args[tool+" "+string(args)]
	if c.file != "" {
		b, _ := json.Marshal(c)
		os.WriteFile(c.file, b, 0o644)
	}
	return n
}

// Get returns one count.
func (c *Counters) Get(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.By[name]
}

// ReadCounts reads the per-tool counts a server started with a counts
// file wrote; a missing file is all zeros.
func ReadCounts(file string) (map[string]int, error) {
	b, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return map[string]int{}, nil
	}
	if err != nil {
		return nil, err
	}
	var c Counters
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, err
	}
	return c.By, nil
}

// NewServer returns the server and its counters. countsFile, when not
// empty, receives the counters as JSON after every execution.
func NewServer(countsFile string) (*mcp.Server, *Counters) {
	c := &Counters{file: countsFile, By: map[string]int{}, Args: map[string]int{}}
	s := mcp.NewServer(&mcp.Implementation{Name: "preflight-test-tools", Version: "1.0.0"}, nil)
	yes, no := true, false
	s.AddTool(&mcp.Tool{
		Name:        Quote,
		Description: "Real-time quote for a symbol (a paid data API: each call is billed).",
		InputSchema: json.RawMessage(`{"type":"object","required":["symbol"],"properties":{"symbol":{"type":"string","minLength":1,"maxLength":12}},"additionalProperties":false}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &yes},
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct{ Symbol string }
		json.Unmarshal(req.Params.Arguments, &in)
		n := c.add(Quote, req.Params.Arguments)
		if in.Symbol == SlowSymbol {
			time.Sleep(SlowFor)
		}
		// The symbol as a JSON string: Go's %q is not JSON for control
		// characters, and a result whose structuredContent is not JSON
		// is never answered by the SDK's server.
		symbol, _ := json.Marshal(in.Symbol)
		text := fmt.Sprintf(`{"symbol":%s,"price":"101.25","execution":%d}`, symbol, n)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}},
			StructuredContent: json.RawMessage(text)}, nil
	})
	s.AddTool(&mcp.Tool{
		Name:        Ticket,
		Description: "Create a ticket in the tracker project.",
		InputSchema: json.RawMessage(`{"type":"object","required":["title"],"properties":{"title":{"type":"string"}}}`),
		// An outputSchema: a withheld call must not carry structuredContent
		// that clients would check against it.
		OutputSchema: json.RawMessage(`{"type":"object","required":["id"],"properties":{"id":{"type":"integer"}}}`),
		Annotations:  &mcp.ToolAnnotations{DestructiveHint: &no},
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		c.add(Ticket, req.Params.Arguments)
		return &mcp.CallToolResult{IsError: true,
			Content: []mcp.Content{&mcp.TextContent{Text: "404 Not Found: project \"OPS\" does not exist"}}}, nil
	})
	s.AddTool(&mcp.Tool{
		Name:        Flaky,
		Description: "Search an index that is sometimes overloaded.",
		InputSchema: json.RawMessage(`{"type":"object","required":["q"],"properties":{"q":{"type":"string"}}}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if c.add(Flaky, req.Params.Arguments) == 1 {
			return &mcp.CallToolResult{IsError: true,
				Content: []mcp.Content{&mcp.TextContent{Text: "503 Service Unavailable: index overloaded, try again"}}}, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "3 hits for " + string(req.Params.Arguments)}}}, nil
	})
	s.AddTool(&mcp.Tool{
		Name:        Countdown,
		Description: "Counts down from n, reporting progress each step; waits for cancellation when n is 0.",
		InputSchema: json.RawMessage(`{"type":"object","required":["n"],"properties":{"n":{"type":"integer","minimum":0,"maximum":10}}}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct{ N int }
		json.Unmarshal(req.Params.Arguments, &in)
		c.add(Countdown, req.Params.Arguments)
		if in.N == 0 {
			<-ctx.Done()
			c.add(Countdown+" cancelled", nil)
			return nil, ctx.Err()
		}
		tok := req.Params.GetProgressToken()
		for i := 1; i <= in.N; i++ {
			if tok != nil {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: float64(in.N)})
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "liftoff"}}}, nil
	})
	s.AddTool(&mcp.Tool{
		Name:        Big,
		Description: "Answers with mb MiB of text.",
		InputSchema: json.RawMessage(`{"type":"object","required":["mb"],"properties":{"mb":{"type":"integer","minimum":0,"maximum":512}}}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct{ MB int }
		json.Unmarshal(req.Params.Arguments, &in)
		c.add(Big, req.Params.Arguments)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", in.MB<<20)}}}, nil
	})
	s.AddResource(&mcp.Resource{URI: "test://readme", Name: "readme", MIMEType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://readme", MIMEType: "text/plain", Text: "three tools for tests"}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "summarize", Description: "Summarize a ticket.", Arguments: []*mcp.PromptArgument{{Name: "id", Required: true}}},
		func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user",
				Content: &mcp.TextContent{Text: "Summarize ticket " + req.Params.Arguments["id"]}}}}, nil
		})
	return s, c
}
