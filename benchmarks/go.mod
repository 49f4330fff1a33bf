module github.com/agentpreflight/preflight/benchmarks

go 1.26.0

require github.com/agentpreflight/preflight v0.0.0

require (
	github.com/aclements/go-moremath v0.0.0-20210112150236-f10218a38794 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/google/jsonschema-go v0.4.3 // indirect
	github.com/gowebpki/jcs v1.0.1 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.2 // indirect
	golang.org/x/perf v0.0.0-20260908200009-22c9c6c9d4da // indirect
	golang.org/x/text v0.42.0 // indirect
)

replace github.com/agentpreflight/preflight => ../

tool golang.org/x/perf/cmd/benchstat
