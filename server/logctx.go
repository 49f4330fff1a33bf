package server

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// requestLogHandler adds the request id, and the trace and span ids when a
// span is recording, to every record logged with a request's context: the
// handler's own lines and every payment line of the paywall.
type requestLogHandler struct {
	slog.Handler
}

func (h requestLogHandler) Handle(ctx context.Context, r slog.Record) error {
	if ob := observationFrom(ctx); ob != nil {
		r.AddAttrs(slog.String("request_id", ob.requestID))
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestLogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return requestLogHandler{h.Handler.WithAttrs(attrs)}
}

func (h requestLogHandler) WithGroup(name string) slog.Handler {
	return requestLogHandler{h.Handler.WithGroup(name)}
}

// withRequestIDs wraps l so its lines carry request ids; nil stays nil.
func withRequestIDs(l *slog.Logger) *slog.Logger {
	if l == nil {
		return nil
	}
	return slog.New(requestLogHandler{l.Handler()})
}
