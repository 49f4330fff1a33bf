// Package sharedstate keeps the guard state of the proxy's runs in a
// store that several proxy replicas share (preflightd proxy --store): per
// run, the ledger (history, money, calls: redisledger or pgledger), the
// results saved for reuse, and the claims that keep a call from running
// twice, with the calls awaiting the client's input, which a retry
// continues on any replica (mcpguard.CallClaims). Every replica that
// opens the same run (principal and run handle) opens the same keys or
// rows.
package sharedstate

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/agentpreflight/preflight/agent"
	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/agentpreflight/preflight/agent/pgledger"
	"github.com/agentpreflight/preflight/agent/redisledger"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// Store is an open shared store.
type Store struct {
	shown string                // the URL without its credentials
	rdb   redis.UniversalClient // a client of one server or of a Cluster
	pool  *pgxpool.Pool
	ttl   time.Duration
}

// Scope is the state of one run in a Store.
type Scope struct {
	Ledger  agent.LedgerStore
	Results tools.ResultStore
	Claims  mcpguard.CallClaims
	// Close stops what the scope runs in this process (lease renewals);
	// it never deletes the shared state, which other replicas may still
	// use.
	Close func()
}

// Want is the sentence that says what a --store value may be.
const Want = "want redis://[USER:PASSWORD@]HOST[:PORT][/DB] (rediss:// for TLS), " +
	"redis+cluster://[USER:PASSWORD@]HOST:PORT[?addr=HOST2:PORT2&addr=...] for a Redis Cluster (rediss+cluster:// for TLS) or postgres://[USER:PASSWORD@]HOST[:PORT]/DATABASE[?sslmode=...] (postgresql:// too)"

// Open connects to the store named by raw, a redis://, redis+cluster://
// (a Redis Cluster, reached through the node the URL names and those of
// its addr parameters; every key of a run is in one hash slot) or
// postgres:// URL, and checks that the server keeps what it acknowledged (see redisledger
// and pgledger: "Required configuration"). resultTTL is how long results
// saved for reuse are kept (at least the longest reuse TTL). An error
// never contains the URL's password.
func Open(ctx context.Context, raw string, resultTTL time.Duration) (*Store, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return nil, fmt.Errorf("--store: the value is not a URL with a host; %s", Want)
	}
	shown := u.Redacted()
	scrub := func(err error) error {
		msg := err.Error()
		if pw, ok := u.User.Password(); ok && pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
		msg = strings.ReplaceAll(msg, raw, shown)
		return errors.New(strings.Join(strings.Fields(msg), " "))
	}
	s := &Store{shown: shown, ttl: resultTTL}
	switch u.Scheme {
	case "redis", "rediss", "redis+cluster", "rediss+cluster":
		if c, ok := strings.CutSuffix(u.Scheme, "+cluster"); ok {
			opt, err := redis.ParseClusterURL(c + raw[len(u.Scheme):])
			if err != nil {
				return nil, fmt.Errorf("--store %s: %v; %s", shown, scrub(err), Want)
			}
			opt.ContextTimeoutEnabled = true
			s.rdb = redis.NewClusterClient(opt)
		} else {
			opt, err := redis.ParseURL(raw)
			if err != nil {
				return nil, fmt.Errorf("--store %s: %v; %s", shown, scrub(err), Want)
			}
			opt.ContextTimeoutEnabled = true
			s.rdb = redis.NewClient(opt)
		}
		if err := s.rdb.Ping(ctx).Err(); err != nil {
			s.rdb.Close()
			return nil, fmt.Errorf("--store %s: the Redis server does not answer: %v", shown, scrub(err))
		}
		// New checks the server's configuration; the scopes opened later
		// skip it.
		l, err := redisledger.New(s.rdb, "preflight-proxy-check", nil)
		if err != nil {
			s.rdb.Close()
			return nil, fmt.Errorf("--store %s: %v (the proxy needs a Redis that keeps what it acknowledged, with CONFIG readable: appendonly yes, maxmemory-policy noeviction; see agent/redisledger's README)", shown, scrub(err))
		}
		l.Close()
	case "postgres", "postgresql":
		cfg, err := pgxpool.ParseConfig(raw)
		if err != nil {
			return nil, fmt.Errorf("--store %s: %v; %s", shown, scrub(err), Want)
		}
		if s.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
			return nil, fmt.Errorf("--store %s: %v", shown, scrub(err))
		}
		if err := s.pool.Ping(ctx); err != nil {
			s.pool.Close()
			return nil, fmt.Errorf("--store %s: the PostgreSQL server does not answer: %v", shown, scrub(err))
		}
		// New checks the server's configuration and creates the ledger's
		// schema; the scopes opened later skip the check.
		l, err := pgledger.New(ctx, s.pool, "preflight-proxy-check", nil)
		if err != nil {
			s.pool.Close()
			return nil, fmt.Errorf("--store %s: %v", shown, scrub(err))
		}
		l.Close()
		if err := createPGSchema(ctx, s.pool); err != nil {
			s.pool.Close()
			return nil, fmt.Errorf("--store %s: creating the proxy's tables: %v", shown, scrub(err))
		}
	default:
		return nil, fmt.Errorf("--store %s: unknown scheme %q; %s", shown, u.Scheme, Want)
	}
	return s, nil
}

// String returns the store's URL without its credentials.
func (s *Store) String() string { return s.shown }

// Close closes the store's connections.
func (s *Store) Close() error {
	if s.rdb != nil {
		return s.rdb.Close()
	}
	s.pool.Close()
	return nil
}

// ScopeName is the name of the shared state of principal's run: a digest
// of both (each length-prefixed, so that no pair of strings names
// another's scope), 67 bytes of [0-9a-f-s], whatever the two hold.
func ScopeName(principal, run string) string {
	h := sha256.New()
	h.Write([]byte("preflightd proxy scope v1\x00"))
	var n [8]byte
	for _, part := range []string{principal, run} {
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		h.Write(n[:])
		h.Write([]byte(part))
	}
	return "s1-" + hex.EncodeToString(h.Sum(nil))
}

// Scope opens the state of principal's run. It does no I/O.
func (s *Store) Scope(principal, run string) (Scope, error) {
	name := ScopeName(principal, run)
	if s.rdb != nil {
		l, err := redisledger.New(s.rdb, name, &redisledger.Options{AllowUnsafeServer: true})
		if err != nil {
			return Scope{}, err
		}
		r, err := redisledger.NewResultStore(s.rdb, name, &redisledger.ResultOptions{TTL: s.ttl})
		if err != nil {
			l.Close()
			return Scope{}, err
		}
		return Scope{Ledger: l, Results: r, Claims: &redisClaims{c: s.rdb, base: "preflight:{" + name + "}:claim:"},
			Close: func() { l.Close() }}, nil
	}
	l, err := pgledger.New(context.Background(), s.pool, name, &pgledger.Options{AllowUnsafeServer: true})
	if err != nil {
		return Scope{}, err
	}
	return Scope{Ledger: l, Results: &pgResults{db: s.pool, scope: name, ttl: s.ttl}, Claims: &pgClaims{db: s.pool, scope: name},
		Close: func() { l.Close() }}, nil
}
