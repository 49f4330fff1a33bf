module github.com/agentpreflight/preflight/agent/redisledger

go 1.25.0

require (
	github.com/agentpreflight/preflight v0.1.0
	github.com/google/go-cmp v0.7.0
	github.com/redis/go-redis/v9 v9.17.3
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
)
