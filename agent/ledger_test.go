package agent

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/google/go-cmp/cmp"
)

// fp returns a distinct valid fingerprint for a small number.
func fp(n int) string { return fmt.Sprintf("%064x", n) }

func TestHistoryAgesAdvance(t *testing.T) {
	clock := newFakeClock()
	l := NewLedger(&LedgerOptions{Now: clock.Now})
	if err := l.Record(Entry{ToolCallID: "c1", Fingerprint: fp(1), Outcome: preflight.OutcomeSuccess, ResultReference: "ref:1", GoalHash: "g"}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(1500 * time.Millisecond)
	if err := l.Record(Entry{ToolCallID: "c2", Fingerprint: fp(2), Outcome: preflight.OutcomeTerminalFailure}); err != nil {
		t.Fatal(err)
	}

	steps := []struct {
		name    string
		advance time.Duration
		ages    []json.Number // oldest recorded first
	}{
		{"just recorded", 0, []json.Number{"1.5", "0"}},
		{"whole seconds", 8500 * time.Millisecond, []json.Number{"10", "8.5"}},
		{"milliseconds kept", 250 * time.Millisecond, []json.Number{"10.25", "8.75"}},
		{"sub-millisecond truncated", 999 * time.Microsecond, []json.Number{"10.25", "8.75"}},
		{"an hour later", time.Hour, []json.Number{"3610.25", "3608.75"}},
	}
	for _, s := range steps {
		clock.Advance(s.advance)
		want := []preflight.HistoryEntry{
			{ToolCallID: "c1", Fingerprint: fp(1), Outcome: preflight.OutcomeSuccess, ResultReference: "ref:1", AgeSeconds: s.ages[0], GoalHash: "g"},
			{ToolCallID: "c2", Fingerprint: fp(2), Outcome: preflight.OutcomeTerminalFailure, AgeSeconds: s.ages[1]},
		}
		if diff := cmp.Diff(want, history(t, l)); diff != "" {
			t.Errorf("%s: History() mismatch (-want +got):\n%s", s.name, diff)
		}
	}
}

func TestHistoryClockStepsBack(t *testing.T) {
	clock := newFakeClock()
	l := NewLedger(&LedgerOptions{Now: clock.Now})
	if err := l.Record(Entry{ToolCallID: "c1", Fingerprint: fp(1), Outcome: preflight.OutcomeSuccess}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(-time.Minute)
	if diff := cmp.Diff(json.Number("0"), history(t, l)[0].AgeSeconds); diff != "" {
		t.Errorf("age after the clock stepped back (-want +got):\n%s", diff)
	}
}

func TestNewLedgerNilOptions(t *testing.T) {
	l := NewLedger(nil)
	if err := l.Record(Entry{ToolCallID: "c1", Fingerprint: fp(1), Outcome: preflight.OutcomeSuccess}); err != nil {
		t.Fatal(err)
	}
	if got := len(history(t, l)); got != 1 {
		t.Errorf("len(History()) = %d, want 1", got)
	}
}

func TestRecordRejectsMalformedEntries(t *testing.T) {
	ok := Entry{ToolCallID: "c1", Fingerprint: fp(1), Outcome: preflight.OutcomeSuccess}
	tests := []struct {
		name  string
		edit  func(*Entry)
		wants string
	}{
		{"empty tool call id", func(e *Entry) { e.ToolCallID = "" }, "ToolCallID is empty"},
		{"short fingerprint", func(e *Entry) { e.Fingerprint = "abc" }, `the Fingerprint "abc" is not 64 lowercase hex digits`},
		{"uppercase fingerprint", func(e *Entry) { e.Fingerprint = strings.ToUpper(fp(10)) }, "is not 64 lowercase hex digits"},
		{"empty outcome", func(e *Entry) { e.Outcome = "" }, `Outcome "" is not success`},
		{"unknown outcome", func(e *Entry) { e.Outcome = "failed" }, `Outcome "failed" is not success`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLedger(nil)
			e := ok
			tt.edit(&e)
			err := l.Record(e)
			if err == nil || !strings.Contains(err.Error(), tt.wants) {
				t.Fatalf("Record() error = %v, want one containing %q", err, tt.wants)
			}
			if got := history(t, l); len(got) != 0 {
				t.Errorf("History() after a rejected entry = %v, want empty", got)
			}
		})
	}
}

// ids lists the tool call ids of a history, in order.
func ids(h []preflight.HistoryEntry) []string {
	out := []string{}
	for _, e := range h {
		out = append(out, e.ToolCallID)
	}
	return out
}

func TestRecordDropsRedundantEntries(t *testing.T) {
	s, term, trans := preflight.OutcomeSuccess, preflight.OutcomeTerminalFailure, preflight.OutcomeTransientFailure
	tests := []struct {
		name    string
		entries []Entry // ToolCallIDs are filled in as e0, e1, ...
		want    []string
	}{
		{
			"newer success with reference replaces older successes of the same call and goal",
			[]Entry{{Fingerprint: fp(1), Outcome: s, ResultReference: "a", GoalHash: "g"}, {Fingerprint: fp(1), Outcome: s, GoalHash: "g"}, {Fingerprint: fp(1), Outcome: s, ResultReference: "b", GoalHash: "g"}},
			[]string{"e2"},
		},
		{
			"success without reference keeps an older one with a reference",
			[]Entry{{Fingerprint: fp(1), Outcome: s, ResultReference: "a", GoalHash: "g"}, {Fingerprint: fp(1), Outcome: s, GoalHash: "g"}},
			[]string{"e0", "e1"},
		},
		{
			"success without reference replaces an older one without",
			[]Entry{{Fingerprint: fp(1), Outcome: s}, {Fingerprint: fp(1), Outcome: s}},
			[]string{"e1"},
		},
		{
			"successes under different goals are all kept",
			[]Entry{{Fingerprint: fp(1), Outcome: s, ResultReference: "a", GoalHash: "g1"}, {Fingerprint: fp(1), Outcome: s, ResultReference: "b", GoalHash: "g2"}},
			[]string{"e0", "e1"},
		},
		{
			"successes of different calls are all kept",
			[]Entry{{Fingerprint: fp(1), Outcome: s, ResultReference: "a"}, {Fingerprint: fp(2), Outcome: s, ResultReference: "b"}},
			[]string{"e0", "e1"},
		},
		{
			"terminal failures are counted, never merged",
			[]Entry{{Fingerprint: fp(1), Outcome: term}, {Fingerprint: fp(1), Outcome: term}, {Fingerprint: fp(1), Outcome: term}},
			[]string{"e0", "e1", "e2"},
		},
		{
			"only the newest transient failure of a call is kept",
			[]Entry{{Fingerprint: fp(1), Outcome: trans}, {Fingerprint: fp(2), Outcome: trans}, {Fingerprint: fp(1), Outcome: trans}},
			[]string{"e1", "e2"},
		},
		{
			"different outcomes of one call are all kept",
			[]Entry{{Fingerprint: fp(1), Outcome: trans}, {Fingerprint: fp(1), Outcome: term}, {Fingerprint: fp(1), Outcome: s, ResultReference: "a"}},
			[]string{"e0", "e1", "e2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLedger(nil)
			for i, e := range tt.entries {
				e.ToolCallID = fmt.Sprintf("e%d", i)
				if err := l.Record(e); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(tt.want, ids(history(t, l))); diff != "" {
				t.Errorf("recorded ids mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEvictionOrder(t *testing.T) {
	// classes: T = transient, N = success without reference,
	// S = success with reference, F = terminal failure.
	entry := func(class byte, n int) Entry {
		e := Entry{ToolCallID: fmt.Sprintf("%c%d", class, n), Fingerprint: fp(n)}
		switch class {
		case 'T':
			e.Outcome = preflight.OutcomeTransientFailure
		case 'N':
			e.Outcome = preflight.OutcomeSuccess
		case 'S':
			e.Outcome, e.ResultReference = preflight.OutcomeSuccess, fmt.Sprintf("ref:%d", n)
		case 'F':
			e.Outcome = preflight.OutcomeTerminalFailure
		}
		return e
	}
	tests := []struct {
		name    string
		fill    string // one class letter per entry; 100 entries
		extra   []byte // recorded after the fill, one by one
		evicted []string
	}{
		{"oldest transient failure first", strings.Repeat("F", 50) + "TT" + strings.Repeat("S", 48), []byte{'S'}, []string{"T50"}},
		{"then successes without reference", strings.Repeat("S", 40) + "N" + strings.Repeat("F", 58) + "N", []byte{'F', 'F'}, []string{"N40", "N99"}},
		{"then the oldest success with reference", strings.Repeat("F", 10) + strings.Repeat("S", 90), []byte{'F'}, []string{"S10"}},
		{"terminal failures last; an older success goes before them", strings.Repeat("F", 100), []byte{'S', 'S'}, []string{"F0", "S100"}},
		{"the entry just recorded is never evicted", strings.Repeat("F", 100), []byte{'T'}, []string{"F0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if len(tt.fill) != preflight.MaxHistory {
				t.Fatalf("fill has %d entries, want %d", len(tt.fill), preflight.MaxHistory)
			}
			l := NewLedger(nil)
			var all []string
			for i, class := range []byte(tt.fill + string(tt.extra)) {
				e := entry(class, i)
				all = append(all, e.ToolCallID)
				if err := l.Record(e); err != nil {
					t.Fatal(err)
				}
			}
			got := ids(history(t, l))
			kept := map[string]bool{}
			for _, id := range got {
				kept[id] = true
			}
			var evicted []string
			for _, id := range all {
				if !kept[id] {
					evicted = append(evicted, id)
				}
			}
			if diff := cmp.Diff(tt.evicted, evicted); diff != "" {
				t.Errorf("evicted entries mismatch (-want +got):\n%s", diff)
			}
			if len(got) != preflight.MaxHistory {
				t.Errorf("len(History()) = %d, want %d", len(got), preflight.MaxHistory)
			}
		})
	}
}

func TestConcurrentRecording(t *testing.T) {
	clock := newFakeClock()
	l := NewLedger(&LedgerOptions{Now: clock.Now})
	const workers, each = 8, 40
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				n := w*each + i
				if err := l.Record(Entry{ToolCallID: fmt.Sprint(n), Fingerprint: fp(n), Outcome: preflight.OutcomeTerminalFailure}); err != nil {
					t.Error(err)
				}
				clock.Advance(time.Millisecond)
				if h := history(t, l); len(h) > preflight.MaxHistory {
					t.Errorf("len(History()) = %d, over %d", len(h), preflight.MaxHistory)
				}
			}
		}()
	}
	wg.Wait()
	h := history(t, l)
	if len(h) != preflight.MaxHistory {
		t.Fatalf("len(History()) = %d, want %d", len(h), preflight.MaxHistory)
	}
	seen := map[string]bool{}
	for _, e := range h {
		if seen[e.ToolCallID] {
			t.Errorf("entry %s appears twice", e.ToolCallID)
		}
		seen[e.ToolCallID] = true
	}
}
