package agent

import "github.com/agentpreflight/preflight"

// AdapterOptions configures the guard of an agent-framework adapter
// (agent/adkguard, agent/einoguard, agent/genkitguard; each names it
// Options and says what a tool's result is in its framework). The zero
// value and nil both work.
type AdapterOptions struct {
	// Session configures the guard's session: budget (Guard.BudgetUSD),
	// call limit (Guard.MaxCalls), policies, result store.
	Session SessionOptions
	// Specs give per tool name its catalog entry (input schema, effects:
	// only a read-only tool is ever reused or coalesced), price, TTL and
	// retry cap. Empty PriceUSD, TTLSeconds and RetryCap are taken from
	// Defaults; an empty Provider is DefaultProvider.
	Specs []ToolSpec
	// Defaults gives the price, TTL and retry cap of tools without a spec,
	// which are decided as operations the catalog lacks (see
	// UnsupportedPolicy). An empty TTLSeconds means 300.
	Defaults ToolSpec
	// Classify classifies a call that ran from its result (JSON, or the
	// tool's text: the adapter says which) and its error. Nil means
	// ClassifyError(err).
	Classify func(tool string, result []byte, err error) preflight.Outcome
}
