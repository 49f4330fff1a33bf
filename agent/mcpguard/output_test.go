package mcpguard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// weatherServer is a go-sdk server with one tool, weather, whose
// outputSchema asks for a number tempC and a date-time observed; its
// arguments' mode says what structuredContent it returns.
func weatherServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "1.0.0"}, nil)
	tool := &mcp.Tool{
		Name:        "weather",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"mode":{"type":"string"}}}`),
		OutputSchema: json.RawMessage(`{"type":"object","required":["tempC"],"properties":{"tempC":{"type":"number"},` +
			`"observed":{"type":"string","format":"date-time"}},"additionalProperties":false}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}
	srv.AddTool(tool, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args struct{ Mode string }
		json.Unmarshal(req.Params.Arguments, &args)
		res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "weather"}}}
		switch args.Mode {
		case "good":
			res.StructuredContent = map[string]any{"tempC": 21.5, "observed": "2026-11-27T05:00:00Z"}
		case "wrong type":
			res.StructuredContent = map[string]any{"tempC": "warm"}
		case "extra":
			res.StructuredContent = map[string]any{"tempC": 1, "wind": 3}
		case "bad date":
			res.StructuredContent = map[string]any{"tempC": 1, "observed": "yesterday"}
		case "error":
			res.IsError = true
			res.StructuredContent = map[string]any{"tempC": "n/a"}
		}
		return res, nil
	})
	return srv
}

// TestOutputSchema: the structuredContent of a result is checked against
// the tool's listed outputSchema (a go-sdk server and client, a Session
// between them); a mismatch is a warning in the CallReport and the log,
// the result is passed on unchanged; an isError result is not checked;
// format is asserted only with Options.AssertFormat; NoOutputCheck turns
// the check off.
func TestOutputSchema(t *testing.T) {
	cs := connect(t, weatherServer(), newClient(), "")
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	listed, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	type issue struct{ Path, Code string }
	tests := []struct {
		mode string
		want []issue // with format annotation-only
	}{
		{"good", nil},
		{"wrong type", []issue{{"/structuredContent/tempC", "type"}}},
		{"extra", []issue{{"/structuredContent/wind", "additionalProperties"}}},
		{"bad date", nil},
		{"none", []issue{{"/structuredContent", "required"}}},
		{"error", nil},
	}
	for _, opts := range []mcpguard.Options{{}, {AssertFormat: true}, {NoOutputCheck: true}} {
		var logged bytes.Buffer
		opts.Logger = slog.New(slog.NewTextHandler(&logged, nil))
		s, err := mcpguard.NewSession(&opts)
		if err != nil {
			t.Fatal(err)
		}
		s.SawToolsList("", listed)
		for _, tc := range tests {
			logged.Reset()
			var report mcpguard.CallReport
			ctx := mcpguard.WithCallReport(context.Background(), &report)
			var sent []byte
			out, err := s.CallTool(ctx, json.RawMessage(`{"name":"weather","arguments":{"mode":"`+tc.mode+`"}}`), func(ctx context.Context) (json.RawMessage, error) {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "weather", Arguments: map[string]any{"mode": tc.mode}})
				if err != nil {
					return nil, err
				}
				sent, err = json.Marshal(res)
				return sent, err
			})
			if err != nil {
				t.Fatalf("%s: %v", tc.mode, err)
			}
			if !bytes.Equal(out, sent) {
				t.Errorf("%s: the result was changed:\n got %s\nwant %s", tc.mode, out, sent)
			}
			want := tc.want
			if opts.AssertFormat && tc.mode == "bad date" {
				want = []issue{{"/structuredContent/observed", "format"}}
			}
			if opts.NoOutputCheck {
				want = nil
			}
			var got []issue
			for _, is := range report.OutputIssues {
				got = append(got, issue{is.Path, string(is.Code)})
				if is.Message == "" {
					t.Errorf("%s: an issue without a message: %+v", tc.mode, is)
				}
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("%+v %s: OutputIssues (-want +got):\n%s", opts, tc.mode, d)
			}
			warned := strings.Contains(logged.String(), "level=WARN") && strings.Contains(logged.String(), "tool=weather")
			if warned != (len(want) > 0) {
				t.Errorf("%+v %s: warned=%v; logged %q", opts, tc.mode, warned, logged.String())
			}
			if !report.Decided || report.Report.Decision.Verdict != preflight.VerdictAllow {
				t.Errorf("%s: the call was not decided and allowed: %+v", tc.mode, report)
			}
		}
	}

	// As server middleware (no CallReport there): the warning is logged
	// and the client gets the result.
	var logged bytes.Buffer
	srv := weatherServer()
	srv.AddReceivingMiddleware(mcpguard.Server(&mcpguard.Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))}))
	mcs := connect(t, srv, newClient(), "")
	if _, err := mcs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	res, err := mcs.CallTool(context.Background(), &mcp.CallToolParams{Name: "weather", Arguments: map[string]any{"mode": "wrong type"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Errorf("middleware: the result was withheld: %+v", res)
	}
	if line := logged.String(); !strings.Contains(line, "outputSchema") || !strings.Contains(line, "/structuredContent/tempC") {
		t.Errorf("middleware: no warning naming the mismatch; logged %q", line)
	}
}

// TestAssertFormatInput: with Options.AssertFormat a listed tool's
// inputSchema asserts format, so a call with a malformed date-time is not
// forwarded; without it, it is.
func TestAssertFormatInput(t *testing.T) {
	list := `{"tools":[{"name":"book","inputSchema":{"type":"object","properties":{"at":{"type":"string","format":"date-time"}}}}]}`
	for _, assert := range []bool{false, true} {
		s, err := mcpguard.NewSession(&mcpguard.Options{AssertFormat: assert, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		s.SawToolsList("", json.RawMessage(list))
		for _, at := range []string{"2026-11-27T05:00:00Z", "next tuesday"} {
			forwarded := false
			out, err := s.CallTool(context.Background(), json.RawMessage(`{"name":"book","arguments":{"at":"`+at+`"}}`), func(context.Context) (json.RawMessage, error) {
				forwarded = true
				return json.RawMessage(`{"content":[]}`), nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if want := !assert || at[0] == '2'; forwarded != want {
				t.Errorf("AssertFormat=%v at=%q: forwarded=%v, want %v (%s)", assert, at, forwarded, want, out)
			}
		}
	}
}
