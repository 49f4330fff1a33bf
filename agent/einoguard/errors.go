package einoguard

import (
	"context"

	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
)

// ErrorsToModel returns a tool middleware that hands a tool's Go error to
// the model as the tool's text result, "error: " followed by the error's
// text, instead of ending the run (eino ends a run on a tool's error),
// and passes interrupts (tool.Interrupt, compose.Interrupt) on
// unchanged, so that a paused call still pauses the run. Put it first,
// outside the guard, which then classifies the error itself (by
// agent.ClassifyError) and whose gathering of a streamed result it sees
// fail too:
//
//	ToolCallMiddlewares: []compose.ToolMiddleware{einoguard.ErrorsToModel(), guard.Middleware()},
//
// (Inside the guard, the guard reads the text as the failure it is:
// adapt.InBand reads the HTTP status the text names.)
//
// It is what utils.WrapToolWithErrorHandler does for one tool, for all
// the tools of a node at once.
func ErrorsToModel() compose.ToolMiddleware {
	text := func(err error) string { return "error: " + err.Error() }
	keep := func(err error) bool { _, ok := compose.IsInterruptRerunError(err); return err == nil || ok }
	return compose.ToolMiddleware{
		Invokable: func(next compose.InvokableToolEndpoint) compose.InvokableToolEndpoint {
			return func(ctx context.Context, in *compose.ToolInput) (*compose.ToolOutput, error) {
				out, err := next(ctx, in)
				if keep(err) {
					return out, err
				}
				return &compose.ToolOutput{Result: text(err)}, nil
			}
		},
		Streamable: func(next compose.StreamableToolEndpoint) compose.StreamableToolEndpoint {
			return func(ctx context.Context, in *compose.ToolInput) (*compose.StreamToolOutput, error) {
				out, err := next(ctx, in)
				if keep(err) {
					return out, err
				}
				return &compose.StreamToolOutput{Result: schema.StreamReaderFromArray([]string{text(err)})}, nil
			}
		},
		EnhancedInvokable: func(next compose.EnhancedInvokableToolEndpoint) compose.EnhancedInvokableToolEndpoint {
			return func(ctx context.Context, in *compose.ToolInput) (*compose.EnhancedInvokableToolOutput, error) {
				out, err := next(ctx, in)
				if keep(err) {
					return out, err
				}
				return &compose.EnhancedInvokableToolOutput{Result: textResult(text(err))}, nil
			}
		},
		EnhancedStreamable: func(next compose.EnhancedStreamableToolEndpoint) compose.EnhancedStreamableToolEndpoint {
			return func(ctx context.Context, in *compose.ToolInput) (*compose.EnhancedStreamableToolOutput, error) {
				out, err := next(ctx, in)
				if keep(err) {
					return out, err
				}
				return &compose.EnhancedStreamableToolOutput{Result: schema.StreamReaderFromArray([]*schema.ToolResult{textResult(text(err))})}, nil
			}
		},
	}
}

// textResult is a multimodal result of one text part.
func textResult(s string) *schema.ToolResult {
	return &schema.ToolResult{Parts: []schema.ToolOutputPart{{Type: schema.ToolPartTypeText, Text: s}}}
}
