package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentpreflight/preflight/server/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if errors.As(err, new(reportedError)) {
		os.Exit(1) // the reason is already in the JSON log
	}
	cli.Exit("preflightd", err)
}
