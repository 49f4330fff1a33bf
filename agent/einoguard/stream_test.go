package einoguard_test

import (
	"context"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/einoguard"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
)

// TestStreamedAndMultimodalTools: a streamed result is gathered, handed
// on whole and reused; a multimodal result is reused part for part; both
// tools run once.
func TestStreamedAndMultimodalTools(t *testing.T) {
	ctx := context.Background()
	streamRuns, imageRuns := 0, 0
	st, err := utils.InferStreamTool("read_log", "Stream a log.", func(_ context.Context, in agenttest.SearchArgs) (*schema.StreamReader[string], error) {
		streamRuns++
		return schema.StreamReaderFromArray([]string{"line 1\n", "line 2\n", in.Q}), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	et, err := utils.InferEnhancedTool("chart", "Draw a chart.", func(_ context.Context, in agenttest.SearchArgs) (*schema.ToolResult, error) {
		imageRuns++
		url := "https://example.com/" + in.Q + ".png"
		return &schema.ToolResult{Parts: []schema.ToolOutputPart{{Type: schema.ToolPartTypeText, Text: "chart of " + in.Q},
			{Type: schema.ToolPartTypeImage, Image: &schema.ToolOutputImage{MessagePartCommon: schema.MessagePartCommon{URL: &url}}}}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	readOnly := func(name string) tools.Spec {
		return tools.Spec{Operation: preflight.Operation{Name: name, Effects: preflight.EffectsReadOnly}}
	}
	g, err := einoguard.New(&einoguard.Options{Specs: []tools.Spec{readOnly("read_log"), readOnly("chart")}})
	if err != nil {
		t.Fatal(err)
	}
	tn, err := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{Tools: []tool.BaseTool{st, et},
		ToolCallMiddlewares: []compose.ToolMiddleware{g.Middleware()}})
	if err != nil {
		t.Fatal(err)
	}
	turn := assistant([]agenttest.Call{{ID: "a", Tool: "read_log", Args: `{"q":"end"}`}, {ID: "b", Tool: "chart", Args: `{"q":"sales"}`}})
	var first []*schema.Message
	for i := range 3 {
		out, err := tn.Invoke(ctx, turn)
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		if out[0].Content != "line 1\nline 2\nend" {
			t.Fatalf("turn %d: streamed result %q", i, out[0].Content)
		}
		if len(out[1].UserInputMultiContent) != 2 || out[1].UserInputMultiContent[1].Image == nil {
			t.Fatalf("turn %d: multimodal result %+v", i, out[1])
		}
		if i == 0 {
			first = out
		} else if *out[1].UserInputMultiContent[1].Image.URL != *first[1].UserInputMultiContent[1].Image.URL {
			t.Fatalf("turn %d: reused image differs", i)
		}
	}
	if streamRuns != 1 || imageRuns != 1 {
		t.Fatalf("streamed tool ran %d times, multimodal tool %d times; want once each", streamRuns, imageRuns)
	}
}

// failingStream is a stream that yields a chunk, then fails with a 503.
type failingStream struct{}

func (failingStream) Error() string { return "HTTP 503 Service Unavailable" }

// TestStreamErrorToModel: a streamed result that fails halfway (the
// guard sees the failure as it gathers the stream) reaches the model as
// text through ErrorsToModel, put before the guard, and the run goes on;
// the failure is recorded as transient and never reused: the same call
// runs again, and its success is then reused.
func TestStreamErrorToModel(t *testing.T) {
	ctx := context.Background()
	runs := 0
	st, err := utils.InferStreamTool("read_log", "Stream a log.", func(_ context.Context, in agenttest.SearchArgs) (*schema.StreamReader[string], error) {
		runs++
		if runs == 1 {
			sr, sw := schema.Pipe[string](2)
			sw.Send("line 1\n", nil)
			sw.Send("", failingStream{})
			sw.Close()
			return sr, nil
		}
		return schema.StreamReaderFromArray([]string{"line 1\n", "line 2\n", in.Q}), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	g, err := einoguard.New(&einoguard.Options{Specs: []tools.Spec{{Operation: preflight.Operation{Name: "read_log", Effects: preflight.EffectsReadOnly}}}})
	if err != nil {
		t.Fatal(err)
	}
	tn, err := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{Tools: []tool.BaseTool{st},
		ToolCallMiddlewares: []compose.ToolMiddleware{einoguard.ErrorsToModel(), g.Middleware()}})
	if err != nil {
		t.Fatal(err)
	}
	turn := assistant([]agenttest.Call{{ID: "a", Tool: "read_log", Args: `{"q":"end"}`}})
	var got []string
	for i := range 3 {
		out, err := tn.Invoke(ctx, turn)
		if err != nil {
			t.Fatalf("turn %d: the run was aborted: %v", i, err)
		}
		got = append(got, out[0].Content)
	}
	if runs != 2 || got[0] != "error: HTTP 503 Service Unavailable" || got[1] != "line 1\nline 2\nend" || got[2] != got[1] {
		t.Fatalf("runs %d, results %q; want the failure as text, then the call run again, then reused", runs, got)
	}
}
