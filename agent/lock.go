package agent

import "context"

// ctxLock is a mutex whose holder may be slow (it waits on a store across
// the network): a goroutine that waits for it with lockCtx gives up when
// its own context ends, instead of waiting out another call's I/O.
type ctxLock struct{ ch chan struct{} }

func newCtxLock() ctxLock { return ctxLock{ch: make(chan struct{}, 1)} }

func (l ctxLock) Lock() { l.ch <- struct{}{} }

func (l ctxLock) Unlock() { <-l.ch }

// lockCtx takes the lock, or returns ctx.Err() if ctx ends first.
func (l ctxLock) lockCtx(ctx context.Context) error {
	select {
	case l.ch <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
