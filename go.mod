module github.com/agentpreflight/preflight

go 1.25.0
