package server

import (
	"context"
	"net/http"
	"runtime"
	"strconv"
	"time"

	"github.com/agentpreflight/preflight"
)

// Bounds on concurrent evaluation. Every request's own work is bounded
// (the library stops validation at a fixed amount of work, about 50 ms of
// CPU at most), but many such requests at once would still queue on the
// CPU until their answers missed the server's write timeout. The gate lets
// a few evaluate per core, makes the rest wait briefly for a slot, and
// answers those that wait too long 503 server_busy with Retry-After, so
// that every request gets an answer while the server is still able to
// write it.
const (
	gateSlotsPerCPU = 2
	gateRetryAfter  = 1 // seconds, in Retry-After
)

// MaxEvaluationWait is the longest a request waits for a free evaluation
// slot before it is answered 503 server_busy. A paid request's answer can
// come this much later than its body: a server's write timeout must cover
// it besides the read, verify and settle timeouts.
const MaxEvaluationWait = 2 * time.Second

// gate is a counting semaphore over the expensive part of a request:
// decoding and evaluating its body (and, on /mcp, the SDK's handling of
// the message). Reading the body happens before it, so a slow client never
// holds a slot; the paywall's calls to the facilitator happen after it.
type gate struct {
	slots   chan struct{}
	wait    time.Duration
	release func() // g.leave, made once: a method value made per request is an allocation
}

func newGate() *gate {
	g := &gate{slots: make(chan struct{}, gateSlotsPerCPU*runtime.GOMAXPROCS(0)), wait: MaxEvaluationWait}
	g.release = g.leave
	return g
}

// enter takes a slot, waiting at most g.wait (less if ctx ends). It
// returns the function that gives the slot back, or nil when no slot came
// free in time; the caller then answers with busy.
func (g *gate) enter(ctx context.Context) (release func()) {
	select {
	case g.slots <- struct{}{}:
		return g.release
	default:
	}
	t := time.NewTimer(g.wait)
	defer t.Stop()
	select {
	case g.slots <- struct{}{}:
		return g.release
	case <-t.C:
		return nil
	case <-ctx.Done():
		return nil
	}
}

func (g *gate) leave() { <-g.slots }

// busy is the error of a request that found no free slot in time.
func (g *gate) busy() *preflight.Error {
	return &preflight.Error{
		Code: ErrorServerBusy,
		Message: "the server is evaluating as many requests as it can at once (" + strconv.Itoa(cap(g.slots)) +
			") and none finished within " + g.wait.String() + "; nothing was evaluated or charged; retry after " +
			strconv.Itoa(gateRetryAfter) + " s",
	}
}

// writeBusy answers 503 server_busy with Retry-After.
func (g *gate) writeBusy(w http.ResponseWriter) {
	w.Header().Set("Retry-After", strconv.Itoa(gateRetryAfter))
	writeError(w, g.busy())
}
