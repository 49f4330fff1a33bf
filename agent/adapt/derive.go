package adapt

import (
	"encoding/json"
	"sync"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/tools"
)

// Derived adds to a session's tool set the tools its framework describes
// and no spec names, so that a guard given no specs (nil options) still
// knows each tool by name and input schema: a call that breaks the
// schema is not run, and a call that failed terminally is not retried.
// The effects of a derived tool are Options.Defaults.Operation.Effects:
// zero (side-effecting, since the frameworks do not say) means never
// reused or coalesced; a spec saying a tool is read-only is what turns
// reuse on. Price, TTL and retry cap come from Defaults as for any spec.
// A spec without a schema is given the framework's.
//
// An adapter keeps one per session; the zero value is ready to use and
// it is safe for concurrent use.
type Derived struct {
	mu   sync.Mutex
	seen map[string]bool // names added or found in the set
}

// Add adds to s's tool set each of ops (a name and the framework's input
// schema, JSON) whose name the set lacks, with effects, price, TTL and
// retry cap from o's Defaults (nil means the zero options), and gives a
// spec of the set that has no schema the one op carries. A schema the
// catalog refuses is dropped: the tool is added by its name alone. The
// set's specs are otherwise kept. Each name is looked at once. It fails only when even that set cannot be built.
func (d *Derived) Add(s *tools.Session, o *Options, ops ...preflight.Operation) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.seen == nil {
		d.seen = map[string]bool{}
	}
	set := s.Tools()
	var add []tools.Spec
	schemaOnly := map[string]bool{} // specs given a schema here
	for _, op := range ops {
		if op.Name == "" || d.seen[op.Name] {
			continue
		}
		d.seen[op.Name] = true
		sp, ok := set.Spec(op.Name)
		switch {
		case !ok:
			add = append(add, derivedSpec(o, op))
		case len(sp.Operation.Schema) == 0 && len(op.Schema) > 0 && sp.Operation.Name == op.Name:
			sp.Operation.Schema = op.Schema
			add = append(add, sp)
			schemaOnly[op.Name] = true
		}
	}
	if len(add) == 0 {
		return nil
	}
	unknown, _ := set.Spec("") // the spec of names the set lacks
	var specs []tools.Spec
	for _, op := range set.Catalog().Operations() {
		if sp, ok := set.Spec(op.Name); ok && sp.Operation.Provider == op.Provider && !schemaOnly[sp.Operation.Name] {
			specs = append(specs, sp)
		}
	}
	for _, sp := range add {
		next, err := tools.NewSet(unknown, append(specs, sp)...)
		if err != nil {
			sp.Operation.Schema = nil
			if next, err = tools.NewSet(unknown, append(specs, sp)...); err != nil {
				return err
			}
		}
		specs = append(specs, sp)
		set = next
	}
	s.SetTools(set)
	return nil
}

// derivedSpec is the spec of a tool the framework describes as op.
func derivedSpec(o *Options, op preflight.Operation) tools.Spec {
	var def tools.Spec
	if o != nil {
		def = o.Defaults
	}
	if def.TTLSeconds == "" {
		def.TTLSeconds = DefaultTTLSeconds
	}
	return tools.Spec{
		Operation: preflight.Operation{Provider: tools.DefaultProvider, Name: op.Name, Schema: op.Schema, Effects: def.Operation.Effects},
		PriceUSD:  def.PriceUSD, TTLSeconds: def.TTLSeconds, RetryCap: def.RetryCap,
	}
}

// SchemaOf returns v, a framework's input schema, as JSON; nil when it
// has none or it does not marshal.
func SchemaOf(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" || string(b) == "{}" {
		return nil
	}
	return b
}
