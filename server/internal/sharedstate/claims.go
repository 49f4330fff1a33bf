package sharedstate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// newToken returns a claim token no other claim has.
func newToken() string {
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	return hex.EncodeToString(raw[:])
}

// The claims of one scope in Redis: a key per call digest whose value is
// "r:" and the token while the call runs (with the claim's hold as TTL),
// "d:" and the result after it succeeded, or "u" after its outcome was
// unknown (with the idempotency window as TTL).
type redisClaims struct {
	c    redis.UniversalClient
	base string
}

var _ mcpguard.CallClaims = (*redisClaims)(nil)

func (r *redisClaims) Claim(ctx context.Context, digest string, hold time.Duration) (mcpguard.Claim, error) {
	token := newToken()
	ok, err := r.c.SetNX(ctx, r.base+digest, "r:"+token, hold).Result()
	if err != nil {
		return mcpguard.Claim{}, err
	}
	if ok {
		return mcpguard.Claim{Token: token}, nil
	}
	v, err := r.c.Get(ctx, r.base+digest).Bytes()
	if errors.Is(err, redis.Nil) {
		return mcpguard.Claim{}, nil // lapsed in between: the caller claims again
	}
	if err != nil {
		return mcpguard.Claim{}, err
	}
	return claimOf(v), nil
}

// claimOf reads a claim's value.
func claimOf(v []byte) mcpguard.Claim {
	switch {
	case len(v) >= 2 && string(v[:2]) == "d:":
		return mcpguard.Claim{Result: v[2:]}
	case string(v) == "u":
		return mcpguard.Claim{Unknown: true}
	}
	return mcpguard.Claim{Running: true}
}

// releaseScript replaces or drops a claim, only while it is the caller's.
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '' then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) end
return 1`)

func (r *redisClaims) Release(ctx context.Context, digest, token string, result []byte, unknown bool, window time.Duration) error {
	v := ""
	switch {
	case window <= 0:
	case result != nil:
		v = "d:" + string(result)
	case unknown:
		v = "u"
	}
	return releaseScript.Run(ctx, r.c, []string{r.base + digest}, "r:"+token, v, max(window.Milliseconds(), 1)).Err()
}

// Park keeps a call awaiting input under "cont:" and key, whose value
// cannot be read as a claim: continuation keys and call digests differ.
func (r *redisClaims) Park(ctx context.Context, key string, state []byte, ttl time.Duration) error {
	return r.c.Set(ctx, r.base+key, state, max(ttl, time.Millisecond)).Err()
}

func (r *redisClaims) Take(ctx context.Context, key string) ([]byte, error) {
	b, err := r.c.GetDel(ctx, r.base+key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return b, err
}

// The claims of one scope in PostgreSQL: a row per call digest, state 'r'
// (running, with its token), 'd' (succeeded, with its result) or 'u'
// (outcome unknown), until expires.
type pgClaims struct {
	db    *pgxpool.Pool
	scope string
}

var _ mcpguard.CallClaims = (*pgClaims)(nil)

func (p *pgClaims) Claim(ctx context.Context, digest string, hold time.Duration) (mcpguard.Claim, error) {
	token := newToken()
	var got string
	err := p.db.QueryRow(ctx, `INSERT INTO preflight_proxy_claims AS c (scope, digest, token, state, result, expires)
VALUES ($1, $2, $3, 'r', NULL, clock_timestamp() + $4 * interval '1 millisecond')
ON CONFLICT (scope, digest) DO UPDATE SET token = EXCLUDED.token, state = 'r', result = NULL, expires = EXCLUDED.expires
WHERE c.expires < clock_timestamp()
RETURNING token`, p.scope, digest, token, hold.Milliseconds()).Scan(&got)
	switch {
	case err == nil:
		return mcpguard.Claim{Token: got}, nil
	case !errors.Is(err, pgx.ErrNoRows):
		return mcpguard.Claim{}, err
	}
	var state string
	var result []byte
	err = p.db.QueryRow(ctx, `SELECT state, result FROM preflight_proxy_claims WHERE scope = $1 AND digest = $2 AND expires >= clock_timestamp()`,
		p.scope, digest).Scan(&state, &result)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return mcpguard.Claim{}, nil // lapsed in between: the caller claims again
	case err != nil:
		return mcpguard.Claim{}, err
	}
	switch state {
	case "d":
		if result == nil {
			result = []byte{}
		}
		return mcpguard.Claim{Result: result}, nil
	case "u":
		return mcpguard.Claim{Unknown: true}, nil
	}
	return mcpguard.Claim{Running: true}, nil
}

func (p *pgClaims) Release(ctx context.Context, digest, token string, result []byte, unknown bool, window time.Duration) error {
	state := ""
	switch {
	case window <= 0:
	case result != nil:
		state = "d"
	case unknown:
		state = "u"
	}
	if state == "" {
		_, err := p.db.Exec(ctx, `DELETE FROM preflight_proxy_claims WHERE scope = $1 AND digest = $2 AND token = $3 AND state = 'r'`, p.scope, digest, token)
		return err
	}
	_, err := p.db.Exec(ctx, `UPDATE preflight_proxy_claims SET state = $4, result = $5, expires = clock_timestamp() + $6 * interval '1 millisecond'
WHERE scope = $1 AND digest = $2 AND token = $3 AND state = 'r'`, p.scope, digest, token, state, result, window.Milliseconds())
	if err == nil {
		// Rows past their time are dropped as they are passed.
		_, _ = p.db.Exec(ctx, `DELETE FROM preflight_proxy_claims WHERE scope = $1 AND expires < clock_timestamp() - interval '1 minute'`, p.scope)
	}
	return err
}

// Park keeps a call awaiting input as a row of state 'c' whose digest is
// key.
func (p *pgClaims) Park(ctx context.Context, key string, state []byte, ttl time.Duration) error {
	_, err := p.db.Exec(ctx, `INSERT INTO preflight_proxy_claims AS c (scope, digest, token, state, result, expires)
VALUES ($1, $2, '', 'c', $3, clock_timestamp() + $4 * interval '1 millisecond')
ON CONFLICT (scope, digest) DO UPDATE SET token = '', state = 'c', result = EXCLUDED.result, expires = EXCLUDED.expires`,
		p.scope, key, state, max(ttl.Milliseconds(), 1))
	return err
}

func (p *pgClaims) Take(ctx context.Context, key string) ([]byte, error) {
	var b []byte
	var fresh bool
	err := p.db.QueryRow(ctx, `DELETE FROM preflight_proxy_claims WHERE scope = $1 AND digest = $2 AND state = 'c'
RETURNING result, expires >= clock_timestamp()`, p.scope, key).Scan(&b, &fresh)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, err
	case !fresh: // lapsed: dropped
		return nil, nil
	}
	return b, nil
}
