package redisledger

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/redis/go-redis/v9"
)

// ResultOptions configures a [ResultStore]. The zero value and nil both
// work.
type ResultOptions struct {
	// Prefix starts every key, as Options.Prefix. Empty means "preflight".
	Prefix string
	// MaxBytes is the largest result saved; a larger one is refused with
	// tools.ErrResultTooLarge. Zero means 1 MiB.
	MaxBytes int
	// TTL is how long a result is kept. Make it at least the longest
	// FreshnessTTLSeconds of the calls whose results are saved, or reuse
	// will find nothing. Zero means 1 h.
	TTL time.Duration
}

// ResultStore is an tools.ResultStore on Redis for one scope: a result
// saved by one process is returned, byte for byte, to any process that
// asks the same scope for its reference. A reference from another scope
// finds nothing.
type ResultStore struct {
	c        redis.UniversalClient
	base     string
	maxBytes int
	ttl      time.Duration
}

var _ tools.ResultStore = (*ResultStore)(nil)

// refPrefix starts every reference a ResultStore returns.
const refPrefix = "redis:"

// NewResultStore returns the result store of scope on c; scope and
// opts.Prefix follow the rules of [New].
func NewResultStore(c redis.UniversalClient, scope string, opts *ResultOptions) (*ResultStore, error) {
	var o ResultOptions
	if opts != nil {
		o = *opts
	}
	if o.Prefix == "" {
		o.Prefix = "preflight"
	}
	if scope == "" || len(scope) > 200 || strings.ContainsAny(scope, "{}") || strings.ContainsAny(o.Prefix, "{}") {
		return nil, fmt.Errorf("%w: scope %q and prefix %q must be without '{' or '}', the scope 1 to 200 bytes", ErrScope, scope, o.Prefix)
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 1 << 20
	}
	if o.TTL <= 0 {
		o.TTL = time.Hour
	}
	return &ResultStore{c: c, base: o.Prefix + ":{" + scope + "}:result:", maxBytes: o.MaxBytes, ttl: o.TTL}, nil
}

// Put saves result for the store's TTL under a new random reference.
func (r *ResultStore) Put(ctx context.Context, result []byte) (string, error) {
	if len(result) > r.maxBytes {
		return "", tools.ErrResultTooLarge
	}
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	id := hex.EncodeToString(raw[:])
	if err := r.c.Set(ctx, r.base+id, result, r.ttl).Err(); err != nil {
		return "", fmt.Errorf("redisledger: save result: %w", err)
	}
	return refPrefix + id, nil
}

// Get returns the bytes saved under ref, and false when they are not there
// (never saved in this scope, expired, or Redis unreachable).
func (r *ResultStore) Get(ctx context.Context, ref string) ([]byte, bool) {
	id, ok := strings.CutPrefix(ref, refPrefix)
	if !ok || len(id) != 32 {
		return nil, false
	}
	if _, err := hex.DecodeString(id); err != nil {
		return nil, false
	}
	b, err := r.c.Get(ctx, r.base+id).Bytes()
	if errors.Is(err, redis.Nil) || err != nil {
		return nil, false
	}
	return b, true
}
