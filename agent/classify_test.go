package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"

	"github.com/agentpreflight/preflight"
)

type statusErr int

func (e statusErr) Error() string   { return fmt.Sprintf("status %d", int(e)) }
func (e statusErr) StatusCode() int { return int(e) }

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

var _ net.Error = timeoutErr{}

func TestClassifyError(t *testing.T) {
	tests := []struct {
		err  error
		want preflight.Outcome
	}{
		{nil, preflight.OutcomeSuccess},
		{context.DeadlineExceeded, preflight.OutcomeTransientFailure},
		{fmt.Errorf("call: %w", context.DeadlineExceeded), preflight.OutcomeTransientFailure},
		{timeoutErr{}, preflight.OutcomeTransientFailure},
		{statusErr(http.StatusTooManyRequests), preflight.OutcomeTransientFailure},
		{statusErr(http.StatusServiceUnavailable), preflight.OutcomeTransientFailure},
		{statusErr(http.StatusRequestTimeout), preflight.OutcomeTransientFailure},
		{fmt.Errorf("wrapped: %w", statusErr(http.StatusNotFound)), preflight.OutcomeTerminalFailure},
		{statusErr(http.StatusBadRequest), preflight.OutcomeTerminalFailure},
		{statusErr(http.StatusUnauthorized), preflight.OutcomeTerminalFailure},
		{&preflight.Error{Code: preflight.ErrorInvalidRequest}, preflight.OutcomeTerminalFailure},
		{errors.New("connection reset"), preflight.OutcomeTransientFailure},
	}
	for _, tt := range tests {
		if got := ClassifyError(tt.err); got != tt.want {
			t.Errorf("ClassifyError(%v) = %s, want %s", tt.err, got, tt.want)
		}
	}
}
