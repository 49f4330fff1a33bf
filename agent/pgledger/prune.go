package pgledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// idleScope is true for a scope that holds nothing and whose newest
// settlement, release, charge or history entry is older than $2 ms.
const idleScope = `
	s.held = 0
	AND NOT EXISTS (SELECT 1 FROM preflight_holds h WHERE h.scope = s.scope)
	AND NOT EXISTS (SELECT 1 FROM preflight_ended e WHERE e.scope = s.scope AND e.at > clock_timestamp() - $1 * interval '1 millisecond')
	AND NOT EXISTS (SELECT 1 FROM preflight_entries n WHERE n.scope = s.scope AND n.at > clock_timestamp() - $1 * interval '1 millisecond')`

// PruneIdle deletes every scope of the schema on db that holds no money
// and has had no settlement, release, expired hold or history entry for
// idle, with all its rows, and returns the scopes deleted. PostgreSQL
// never expires a scope by itself: run PruneIdle from time to time (a
// cron job, say) to keep the tables small.
//
// Each scope is deleted in its own transaction, with the scope's row
// locked and its idleness checked again once locked, so a scope in use
// is never deleted under a worker. A scope deleted is forgotten: a worker
// that uses it again starts it from zero spending and an empty history.
// Choose idle longer than any pause of a run whose budget must hold (days,
// not minutes); idle must be at least a minute.
func PruneIdle(ctx context.Context, db *pgxpool.Pool, idle time.Duration) ([]string, error) {
	if idle < time.Minute {
		return nil, fmt.Errorf("pgledger: prune: idle %v is shorter than a minute: a scope between two calls could be deleted", idle)
	}
	idleMs := idle.Milliseconds()
	rows, err := db.Query(ctx, "SELECT s.scope FROM preflight_scopes s WHERE"+idleScope, idleMs)
	if err != nil {
		return nil, fmt.Errorf("pgledger: prune: %w", err)
	}
	candidates, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("pgledger: prune: %w", err)
	}
	var pruned []string
	for _, scope := range candidates {
		gone := false
		err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
			// Every operation of a worker locks the scope's row first: once
			// this transaction holds it, none is under way, and the check
			// below (a new statement, so a new snapshot) sees all they did.
			var s string
			err := tx.QueryRow(ctx, "SELECT scope FROM preflight_scopes WHERE scope = $1 FOR UPDATE SKIP LOCKED", scope).Scan(&s)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil // in use right now, or already gone
			}
			if err != nil {
				return err
			}
			var still bool
			if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM preflight_scopes s WHERE s.scope = $2 AND"+idleScope+")", idleMs, scope).Scan(&still); err != nil {
				return err
			}
			if !still {
				return nil
			}
			for _, table := range []string{"preflight_holds", "preflight_ended", "preflight_entries", "preflight_scopes"} {
				if _, err := tx.Exec(ctx, "DELETE FROM "+table+" WHERE scope = $1", scope); err != nil {
					return err
				}
			}
			gone = true
			return nil
		})
		if err != nil {
			return pruned, fmt.Errorf("pgledger: prune %q: %w", scope, err)
		}
		if gone {
			pruned = append(pruned, scope)
		}
	}
	return pruned, nil
}
