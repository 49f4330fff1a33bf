package genkitguard

import (
	"context"

	"github.com/firebase/genkit/go/ai"
)

// ErrorsMiddlewareName is the name ErrorsToModel reports as an
// ai.Middleware.
const ErrorsMiddlewareName = "preflight-errors-to-model"

// ErrorsToModel returns an ai.Middleware that hands a tool's Go error to
// the model as the tool's output {"error": "<the error's text>"} instead
// of ending the Generate (Genkit ends it on a tool's error), and passes
// interrupts (ToolContext.Interrupt) on unchanged, so that a paused call
// still pauses the Generate. Put it before the guard, which then
// classifies the error itself (by agent.ClassifyError):
//
//	ai.WithUse(genkitguard.ErrorsToModel(), guard)
//
// (After the guard, the guard reads the output as the failure it is:
// adapt.InBand.)
func ErrorsToModel() ai.Middleware { return errorsToModel{} }

type errorsToModel struct{}

func (errorsToModel) Name() string { return ErrorsMiddlewareName }

func (errorsToModel) New(context.Context) (*ai.Hooks, error) {
	return &ai.Hooks{WrapTool: func(ctx context.Context, p *ai.ToolParams, next ai.ToolNext) (*ai.MultipartToolResponse, error) {
		res, err := next(ctx, p)
		if interrupt, _ := ai.IsToolInterruptError(err); err == nil || interrupt {
			return res, err
		}
		return &ai.MultipartToolResponse{Output: map[string]any{"error": err.Error()}}, nil
	}}, nil
}
