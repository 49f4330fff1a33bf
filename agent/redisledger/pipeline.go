package redisledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Automatic pipelining. Every function call of a Store (and, with
// Options.WaitReplicas, every script call) goes through (*batcher).do. A
// call that finds a free lane (fewer than maxLanes sends in progress) and
// nothing queued is sent at once, on its own, with the caller's context:
// exactly as without batching. Calls that arrive while every lane is busy
// wait in a queue, and one flusher goroutine sends what is queued as one
// pipeline (at most maxBatch commands) as soon as a lane is free, and
// again until the queue is empty. Redis then reads the commands of a
// pipeline in one read and writes their replies in one write: the system
// calls and event-loop work per call fall with the size of the batch,
// while each call stays its own FCALL, run on its own, with its own
// reply. With Options.NoPipelining every call has a lane of its own.
// With Options.WaitReplicas every send, lone or pipelined, ends with one
// WAIT (sendWait).
//
// Nothing waits for a batch to fill (no timer): a pipeline holds what
// queued during the previous round trip.
//
// Deadlines: a caller waits for its reply or for the end of its context,
// whichever comes first. A caller whose context ends while its command is
// still queued takes the command back (it is never sent: a reservation
// sent for nobody would hold money for nobody) and gets an error wrapping
// errNotSent; so does one whose context has ended, or whose deadline has
// passed, when the flusher comes to its command (before its own goroutine
// could take it back): the flusher leaves it unsent. One whose command is in flight gets an error wrapping the
// context's, and the command is as ambiguous as a command whose deadline
// passes without batching: it may have run. The pipeline itself is bounded
// by the latest deadline among its callers.

// maxBatch bounds the commands of one pipeline.
const maxBatch = 64

// errNotSent is wrapped by the error of a call whose context ended while
// its command waited to be sent: Redis never saw it.
var errNotSent = errors.New("redisledger: the command was not sent to Redis: it was still queued behind other commands of this store when its context ended")

// Where a queued call is.
const (
	queued int32 = iota
	sent
	left // its caller gave up before it was sent
)

// pendingCall is one queued function call.
type pendingCall struct {
	args     []any // the command
	ctx      context.Context
	deadline time.Time // ctx's, or the store's timeout from the call
	state    atomic.Int32
	cmd      *redis.Cmd // set before done is closed
	done     chan struct{}
}

// batcher sends the function calls of one Store, pipelining those that
// overlap.
type batcher struct {
	c       redis.UniversalClient
	keys    []string
	timeout time.Duration // the deadline of a caller without one
	// lanes bounds the sends in progress at once: lone calls sent by
	// their callers and the flusher's pipelines (see maxLanes).
	lanes int
	// wait, when positive, is the replicas every send waits for (WAIT at
	// the end of its pipeline), for at most waitFor.
	wait    int
	waitFor time.Duration

	mu    sync.Mutex
	queue []*pendingCall
	busy  int  // sends in progress
	flush bool // whether a flusher goroutine runs (it counts in busy)
}

// maxLanes is how many sends of one Store may be in progress at once
// before further calls queue for the flusher. One would batch every
// overlap but hold each call behind the one in progress for a round
// trip; a lone caller's typical overlap (a Guard used by one goroutine)
// is a reservation and the settlement of the call before, which two
// lanes send side by side, as without batching; calls beyond those (a
// Guard's goroutines reserving different calls at once) queue.
const maxLanes = 2

// do runs the command args (an FCALL of the store's library, or an EVAL
// with WaitReplicas) and returns it.
func (b *batcher) do(ctx context.Context, args []any) *redis.Cmd {
	b.mu.Lock()
	if len(b.queue) == 0 && b.busy < b.lanes {
		// A free lane and nothing queued: sent at once, by the caller,
		// as without batching.
		b.busy++
		b.mu.Unlock()
		cmd := newCall(ctx, args)
		b.process(ctx, []*redis.Cmd{cmd})
		b.mu.Lock()
		b.busy--
		b.kick()
		b.mu.Unlock()
		return cmd
	}
	p := &pendingCall{args: args, ctx: ctx, done: make(chan struct{})}
	if d, ok := ctx.Deadline(); ok {
		p.deadline = d
	} else {
		p.deadline = time.Now().Add(b.timeout)
	}
	b.queue = append(b.queue, p)
	b.kick()
	b.mu.Unlock()
	select {
	case <-p.done:
		return p.cmd
	case <-ctx.Done():
	}
	select {
	case <-p.done: // the reply came as the context ended: it counts
		return p.cmd
	default:
	}
	// Left by the flusher too, which then answers it: errNotSent either way.
	if p.state.CompareAndSwap(queued, left) || p.state.Load() == left {
		return notSent(ctx, args, context.Cause(ctx))
	}
	cmd := redis.NewCmd(ctx, args[:2]...)
	cmd.SetErr(fmt.Errorf("redisledger: no reply from Redis before the context ended: %w", context.Cause(ctx)))
	return cmd
}

// notSent is the answer to the call args that was never sent, because
// its caller gave up (cause).
func notSent(ctx context.Context, args []any, cause error) *redis.Cmd {
	cmd := redis.NewCmd(ctx, args[:2]...)
	cmd.SetErr(fmt.Errorf("%w: %w", errNotSent, cause))
	return cmd
}

// newCall is the command args (FCALL or EVAL, see Store.command), told
// where its keys start, as FCall tells it: go-redis routes a command by
// its first key and, for an FCALL it was not told of, would take the
// function's name for it (on a Cluster, its slot's primary would answer
// MOVED and send the call on, a round trip more).
func newCall(ctx context.Context, args []any) *redis.Cmd {
	cmd := redis.NewCmd(ctx, args...)
	cmd.SetFirstKeyPos(3)
	return cmd
}

// kick starts the flusher when calls are queued, none runs and a lane is
// free. The caller holds b.mu. Every change that can free a lane or
// queue a call kicks, so a queue is never left without a flusher to come.
func (b *batcher) kick() {
	if len(b.queue) > 0 && !b.flush && b.busy < b.lanes {
		b.flush = true
		b.busy++
		go b.flushQueue()
	}
}

// flushQueue sends the queue as pipelines until it is empty.
func (b *batcher) flushQueue() {
	batch := make([]*pendingCall, 0, maxBatch)
	for {
		batch = batch[:0]
		b.mu.Lock()
		n := 0
		now := time.Now()
		for n < len(b.queue) && len(batch) < maxBatch {
			p := b.queue[n]
			n++
			if err := p.gone(now); err != nil {
				// Its caller gave up: it is not sent with the others.
				if p.state.CompareAndSwap(queued, left) {
					p.cmd = notSent(p.ctx, p.args, err)
					close(p.done)
				}
				continue
			}
			if p.state.CompareAndSwap(queued, sent) {
				batch = append(batch, p)
			}
		}
		rest := copy(b.queue, b.queue[n:])
		clear(b.queue[rest:])
		b.queue = b.queue[:rest]
		if len(batch) == 0 {
			b.flush = false
			b.busy--
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		b.send(batch)
	}
}

// gone returns why p's caller gives up by now (its context's cause, or
// the end of its deadline), or nil.
func (p *pendingCall) gone(now time.Time) error {
	if err := context.Cause(p.ctx); err != nil {
		return err
	}
	if !now.Before(p.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// process sends cmds, one alone and several as one pipeline, followed by
// WAIT with Options.WaitReplicas (sendWait); each command gets its reply.
func (b *batcher) process(ctx context.Context, cmds []*redis.Cmd) {
	switch {
	case b.wait > 0:
		b.sendWait(ctx, cmds)
	case len(cmds) == 1:
		_ = b.c.Process(ctx, cmds[0])
	default:
		pipe := b.c.Pipeline()
		for _, cmd := range cmds {
			_ = pipe.Process(ctx, cmd)
		}
		// Each command carries its own error; Exec's is the first of
		// them.
		_, _ = pipe.Exec(ctx)
	}
}

// send runs batch as one pipeline and hands each caller its command.
func (b *batcher) send(batch []*pendingCall) {
	deadline := batch[0].deadline
	for _, p := range batch[1:] {
		if p.deadline.After(deadline) {
			deadline = p.deadline
		}
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	cmds := make([]*redis.Cmd, len(batch))
	for i, p := range batch {
		cmds[i] = newCall(ctx, p.args)
	}
	b.process(ctx, cmds)
	for i, p := range batch {
		p.cmd = cmds[i]
		close(p.done)
	}
}

// sendWait sends cmds and then WAIT, in one pipeline on one connection to
// the primary of the scope (on a Cluster, the primary of its slot, as the
// client knows it), and fails every command that succeeded with an error
// wrapping ErrNotReplicated unless WAIT saw b.wait replicas: WAIT counts
// the replicas that have every write of its connection, the commands'
// included (each writes: see A in scripts.go).
func (b *batcher) sendWait(ctx context.Context, cmds []*redis.Cmd) {
	var node redis.Pipeliner
	cc, cluster := b.c.(*redis.ClusterClient)
	if cluster {
		n, err := cc.MasterForKey(ctx, b.keys[0])
		if err != nil {
			for _, cmd := range cmds {
				cmd.SetErr(err)
			}
			return
		}
		node = n.Pipeline()
	} else {
		node = b.c.Pipeline()
	}
	for _, cmd := range cmds {
		_ = node.Process(ctx, cmd)
	}
	timeout := b.waitFor
	if d, ok := ctx.Deadline(); ok {
		// WAIT's reply must come before the deadline: a few ms for it.
		timeout = min(timeout, time.Until(d)-5*time.Millisecond)
	}
	timeout = max(timeout, time.Millisecond)
	w := redis.NewIntCmd(ctx, "wait", b.wait, timeout.Milliseconds())
	_ = node.Process(ctx, w)
	_, _ = node.Exec(ctx)
	n, werr := w.Result()
	moved := false
	for _, cmd := range cmds {
		err := cmd.Err()
		if err != nil {
			if msg := err.Error(); strings.HasPrefix(msg, "MOVED ") || strings.HasPrefix(msg, "ASK ") {
				moved = true
			}
			continue
		}
		switch {
		case werr != nil:
			cmd.SetErr(fmt.Errorf("%w: WAIT failed: %w", ErrNotReplicated, werr))
		case n < int64(b.wait):
			cmd.SetErr(fmt.Errorf("%w: %d of %d replicas acknowledged it within %v; it may be lost if the primary fails", ErrNotReplicated, n, b.wait, timeout))
		}
	}
	if moved && cluster {
		// The slot moved: the next call asks the new primary.
		cc.ReloadState(ctx)
	}
}
