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

func TestMemoryStoreLimits(t *testing.T) {
	ctx := context.Background()
	s := NewMemoryStore(3, 10)
	a, _ := s.Put(ctx, []byte("aaaa"))
	b, _ := s.Put(ctx, []byte("bbbb"))
	s.Get(ctx, a)                    // a is now the most recently used
	c, _ := s.Put(ctx, []byte("cc")) // 10 bytes: fits
	if n, size := s.Len(); n != 3 || size != 10 {
		t.Fatalf("Len = %d, %d; want 3, 10", n, size)
	}
	d, _ := s.Put(ctx, []byte("d")) // 11 bytes: b (least recently used) goes
	if _, ok := s.Get(ctx, b); ok {
		t.Fatal("b survived eviction")
	}
	for _, ref := range []string{a, c, d} {
		if _, ok := s.Get(ctx, ref); !ok {
			t.Fatalf("%s was evicted", ref)
		}
	}
	if _, err := s.Put(ctx, make([]byte, 11)); !errors.Is(err, ErrResultTooLarge) {
		t.Fatalf("oversized Put: %v", err)
	}
	// Entry limit.
	s.Put(ctx, nil)
	if n, _ := s.Len(); n != 3 {
		t.Fatalf("%d entries, limit 3", n)
	}
}

func TestMemoryStoreCopies(t *testing.T) {
	ctx := context.Background()
	s := NewMemoryStore(0, 0)
	in := []byte(`{"x":1}`)
	ref, err := s.Put(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	in[0] = 'X'
	out, _ := s.Get(ctx, ref)
	if string(out) != `{"x":1}` {
		t.Fatalf("store kept the caller's slice: %q", out)
	}
	out[0] = 'Y'
	again, _ := s.Get(ctx, ref)
	if string(again) != `{"x":1}` {
		t.Fatalf("Get handed out its own slice: %q", again)
	}
	ref2, _ := s.Put(ctx, []byte(`{"x":1}`))
	if ref2 == ref {
		t.Fatal("two Puts share a reference")
	}
}

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
