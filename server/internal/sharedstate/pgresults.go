package sharedstate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pgSchema is the proxy's tables beside pgledger's: claims and saved
// results, both by scope.
const pgSchema = `
CREATE TABLE IF NOT EXISTS preflight_proxy_claims (
	scope text NOT NULL,
	digest text NOT NULL,
	token text NOT NULL,
	state text NOT NULL,
	result bytea,
	expires timestamptz NOT NULL,
	PRIMARY KEY (scope, digest)
);
CREATE TABLE IF NOT EXISTS preflight_proxy_results (
	scope text NOT NULL,
	id text NOT NULL,
	body bytea NOT NULL,
	expires timestamptz NOT NULL,
	PRIMARY KEY (scope, id)
);
CREATE INDEX IF NOT EXISTS preflight_proxy_results_expires ON preflight_proxy_results (expires);
`

func createPGSchema(ctx context.Context, db *pgxpool.Pool) error {
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(7212345678901235)"); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, pgSchema)
		return err
	})
}

// maxPGResult is the largest result saved in PostgreSQL.
const maxPGResult = 1 << 20

// pgResults is a tools.ResultStore of one scope in PostgreSQL: a
// reference from another scope finds nothing.
type pgResults struct {
	db    *pgxpool.Pool
	scope string
	ttl   time.Duration
}

var _ tools.ResultStore = (*pgResults)(nil)

// pgRef starts every reference a pgResults returns.
const pgRef = "pg:"

func (p *pgResults) Put(ctx context.Context, result []byte) (string, error) {
	if len(result) > maxPGResult {
		return "", tools.ErrResultTooLarge
	}
	id := newToken()
	if _, err := p.db.Exec(ctx, `INSERT INTO preflight_proxy_results (scope, id, body, expires) VALUES ($1, $2, $3, clock_timestamp() + $4 * interval '1 millisecond')`,
		p.scope, id, result, p.ttl.Milliseconds()); err != nil {
		return "", fmt.Errorf("sharedstate: save result: %w", err)
	}
	// Results past their time are dropped as they are passed.
	_, _ = p.db.Exec(ctx, `DELETE FROM preflight_proxy_results WHERE scope = $1 AND expires < clock_timestamp()`, p.scope)
	return pgRef + id, nil
}

func (p *pgResults) Get(ctx context.Context, ref string) ([]byte, bool) {
	id, ok := strings.CutPrefix(ref, pgRef)
	if !ok || len(id) != 32 {
		return nil, false
	}
	var b []byte
	err := p.db.QueryRow(ctx, `SELECT body FROM preflight_proxy_results WHERE scope = $1 AND id = $2 AND expires >= clock_timestamp()`, p.scope, id).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) || err != nil {
		return nil, false
	}
	return b, true
}
