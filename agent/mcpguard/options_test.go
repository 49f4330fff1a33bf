package mcpguard

import (
	"reflect"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent"
	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/tools"
)

// TestOptionsCarryAdaptOptions holds Options to adapt.Options: every field
// of adapt.Options but Ledger, Classify and InterruptOnDefer (see
// Options) is here with the same type, and adapt copies each one.
func TestOptionsCarryAdaptOptions(t *testing.T) {
	want := adapt.Options{
		BudgetUSD: "1", MaxCalls: 2, Advise: agent.SkipAdvised, Unsupported: agent.SkipUnsupported,
		NoCoalesce: true, LedgerStore: agent.NewMemoryLedgerStore(nil), Lease: time.Second,
		Results: tools.NewMemoryResultStore(0, 0), RunID: "r",
		Specs: []tools.Spec{{}}, Defaults: tools.Spec{PriceUSD: "1"},
	}
	var o Options
	wv, ov := reflect.ValueOf(want), reflect.ValueOf(&o).Elem()
	for i := range wv.NumField() {
		name := wv.Type().Field(i).Name
		if name == "Ledger" || name == "Classify" || name == "InterruptOnDefer" {
			continue
		}
		if wv.Field(i).IsZero() {
			t.Fatalf("adapt.Options.%s is zero in this test: give it a value", name)
		}
		f := ov.FieldByName(name)
		if !f.IsValid() || f.Type() != wv.Field(i).Type() {
			t.Fatalf("Options lacks adapt.Options.%s (%v)", name, wv.Field(i).Type())
		}
		f.Set(wv.Field(i))
	}
	gv := reflect.ValueOf(o.adapt())
	for i := range wv.NumField() {
		if name := wv.Type().Field(i).Name; name == "Ledger" || name == "Classify" || name == "InterruptOnDefer" {
			continue
		}
		w, g := wv.Field(i), gv.Field(i)
		same := w.Kind() == reflect.Func && w.Pointer() == g.Pointer() ||
			w.Kind() != reflect.Func && reflect.DeepEqual(w.Interface(), g.Interface())
		if !same {
			t.Errorf("adapt() does not copy %s", wv.Type().Field(i).Name)
		}
	}
}
