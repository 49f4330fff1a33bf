package agent

import (
	"context"
	"errors"
	"net"

	"github.com/agentpreflight/preflight"
)

// ClassifyError is the default outcome classifier for a call that ended
// with err: nil is a success; a deadline, a network timeout, and an error
// carrying HTTP status 408, 425, 429 or 5xx (see [ClassifyStatus]) are
// transient failures; any other 4xx status and a *preflight.Error (the
// arguments broke a schema) are terminal failures. Anything else is a
// transient failure, which never blocks a retry.
//
// An error carries a status when it, or an error it wraps, has a method
// StatusCode() int or HTTPStatus() int.
func ClassifyError(err error) preflight.Outcome {
	if err == nil {
		return preflight.OutcomeSuccess
	}
	var pe *preflight.Error
	if errors.As(err, &pe) {
		return preflight.OutcomeTerminalFailure
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return preflight.OutcomeTransientFailure
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return preflight.OutcomeTransientFailure
	}
	var sc interface{ StatusCode() int }
	if errors.As(err, &sc) {
		return ClassifyStatus(sc.StatusCode())
	}
	var hs interface{ HTTPStatus() int }
	if errors.As(err, &hs) {
		return ClassifyStatus(hs.HTTPStatus())
	}
	return preflight.OutcomeTransientFailure
}

// ClassifyStatus classifies an HTTP status: 2xx and 3xx are successes;
// 408 (timeout), 425 (too early), 429 (rate limited) and 5xx are transient
// failures; every other 4xx is a terminal failure (the same request will
// fail again).
func ClassifyStatus(status int) preflight.Outcome {
	switch {
	case status < 400:
		return preflight.OutcomeSuccess
	case status == 408, status == 425, status == 429, status >= 500:
		return preflight.OutcomeTransientFailure
	}
	return preflight.OutcomeTerminalFailure
}
