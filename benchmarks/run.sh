#!/bin/sh
# Runs the preflight benchmarks against the peers and the server load
# comparison, and regenerates BENCHMARKS.md at the repository root.
# Flags go to the report command; see benchmarks/README.md.
set -eu
cd "$(dirname "$0")"
exec go run ./cmd/report "$@"
