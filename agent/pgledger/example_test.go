package pgledger_test

import (
	"context"
	"fmt"
	"time"

	"github.com/agentpreflight/preflight/agent/pgledger"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A nightly job deletes the scopes no worker has used for a week.
// (Compiled, not run: it needs a PostgreSQL; the package tests start
// their own.)
func ExamplePruneIdle() {
	ctx := context.Background()
	db, err := pgxpool.New(ctx, "postgres://preflight@127.0.0.1:5432/preflight")
	if err != nil {
		panic(err)
	}
	defer db.Close()
	pruned, err := pgledger.PruneIdle(ctx, db, 7*24*time.Hour)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(pruned), "idle scopes deleted")
}
