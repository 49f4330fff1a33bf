package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
	"github.com/google/go-cmp/cmp"
)

// storeOp is one step of a shared store scenario. Exactly one of put, get,
// close or advance is set; owner names the view.
type storeOp struct {
	owner   string
	put     string        // label of a result to save, of size bytes (default 1)
	size    int           // with put
	ttl     time.Duration // with put; 0 means a plain Put
	get     string        // label of a result to read
	close   bool          // close the owner's view
	advance time.Duration // move the clock
}

func TestSharedStore(t *testing.T) {
	put := func(owner, label string, ttl time.Duration) storeOp {
		return storeOp{owner: owner, put: label, ttl: ttl}
	}
	get := func(owner, label string) storeOp { return storeOp{owner: owner, get: label} }
	const live = time.Minute
	tests := []struct {
		name string
		opts SharedResultStoreOptions
		ops  []storeOp
		want []string
		// left is every view's entries and bytes at the end, then the
		// store's, as "owner=entries/bytes".
		left []string
	}{{
		name: "a flood evicts the flooder's own results, never another owner's live one",
		opts: SharedResultStoreOptions{MaxEntries: 4, OwnerEntries: 3},
		ops: []storeOp{
			put("a", "a1", live), put("a", "a2", live),
			put("b", "b1", live), put("b", "b2", live), put("b", "b3", live), put("b", "b4", live), put("b", "b5", live),
			get("a", "a1"), get("a", "a2"), get("b", "b1"), get("b", "b5"),
		},
		want: []string{
			"a put a1: ok", "a put a2: ok",
			"b put b1: ok", "b put b2: ok", "b put b3: ok", "b put b4: ok", "b put b5: ok",
			"a get a1: hit", "a get a2: hit", "b get b1: miss", "b get b5: hit",
		},
		left: []string{"a=2/2", "b=2/2", "store=4/4"},
	}, {
		name: "another owner's live results leave no room: the save is refused",
		opts: SharedResultStoreOptions{MaxEntries: 4, OwnerEntries: 3},
		ops: []storeOp{
			put("a", "a1", live), put("a", "a2", live), put("a", "a3", live), put("c", "c1", live),
			put("b", "b1", live),
			get("a", "a1"), get("c", "c1"), get("b", "b1"),
		},
		want: []string{
			"a put a1: ok", "a put a2: ok", "a put a3: ok", "c put c1: ok",
			"b put b1: " + ErrResultStoreFull.Error(),
			"a get a1: hit", "c get c1: hit", "b get b1: miss",
		},
		left: []string{"a=3/3", "b=0/0", "c=1/1", "store=4/4"},
	}, {
		name: "past its TTL, another owner's result makes room, earliest expiry first",
		opts: SharedResultStoreOptions{MaxEntries: 4, OwnerEntries: 3},
		ops: []storeOp{
			put("a", "a1", 20*time.Second), put("a", "a2", 10*time.Second), put("a", "a3", live), put("c", "c1", live),
			{advance: 21 * time.Second},
			put("b", "b1", live), get("a", "a2"), get("a", "a1"),
			put("b", "b2", live), put("b", "b3", live),
			get("a", "a1"), get("a", "a3"), get("b", "b1"),
		},
		want: []string{
			"a put a1: ok", "a put a2: ok", "a put a3: ok", "c put c1: ok",
			"b put b1: ok", "a get a2: miss", "a get a1: hit", // a2 expired first
			"b put b2: ok", "b put b3: ok", // a1 makes room, then b's own b1
			"a get a1: miss", "a get a3: hit", "b get b1: miss",
		},
		left: []string{"a=1/1", "b=2/2", "c=1/1", "store=4/4"},
	}, {
		name: "a result is live up to and including its TTL",
		opts: SharedResultStoreOptions{MaxEntries: 2, OwnerEntries: 2},
		ops: []storeOp{
			put("a", "a1", 10*time.Second), put("a", "a2", 10*time.Second),
			{advance: 10 * time.Second}, put("b", "b1", live),
			{advance: time.Nanosecond}, put("b", "b2", live),
			get("a", "a1"), get("a", "a2"),
		},
		want: []string{
			"a put a1: ok", "a put a2: ok",
			"b put b1: " + ErrResultStoreFull.Error(), "b put b2: ok",
			"a get a1: miss", "a get a2: hit",
		},
		left: []string{"a=1/1", "b=1/1", "store=2/2"},
	}, {
		name: "a plain Put has no TTL: it makes room once the clock moved",
		opts: SharedResultStoreOptions{MaxEntries: 1},
		ops: []storeOp{
			put("a", "a1", 0), put("b", "b1", live),
			{advance: time.Nanosecond}, put("b", "b2", live),
		},
		want: []string{"a put a1: ok", "b put b1: " + ErrResultStoreFull.Error(), "b put b2: ok"},
		left: []string{"a=0/0", "b=1/1", "store=1/1"},
	}, {
		name: "over its entry quota an owner drops its expired results first, then its least recently used",
		opts: SharedResultStoreOptions{MaxEntries: 100, OwnerEntries: 3},
		ops: []storeOp{
			put("a", "a1", live), put("a", "a2", time.Second), put("a", "a3", live),
			{advance: 2 * time.Second},
			put("a", "a4", live), get("a", "a2"), get("a", "a1"),
			put("a", "a5", live), get("a", "a3"), get("a", "a1"),
		},
		want: []string{
			"a put a1: ok", "a put a2: ok", "a put a3: ok",
			"a put a4: ok", "a get a2: miss", "a get a1: hit",
			"a put a5: ok", "a get a3: miss", "a get a1: hit",
		},
		left: []string{"a=3/3", "store=3/3"},
	}, {
		name: "over its quota, with nothing of its own expired, an owner drops its least recently used (another owner's expired result or none)",
		opts: SharedResultStoreOptions{MaxEntries: 100, OwnerEntries: 2},
		ops: []storeOp{
			put("a", "a1", live), put("a", "a2", live), get("a", "a1"),
			put("a", "a3", live), get("a", "a2"), get("a", "a1"),
			put("b", "b1", time.Second), {advance: 2 * time.Second},
			get("a", "a3"), put("a", "a4", live), get("a", "a1"), get("a", "a3"), get("b", "b1"),
		},
		want: []string{
			"a put a1: ok", "a put a2: ok", "a get a1: hit",
			"a put a3: ok", "a get a2: miss", "a get a1: hit",
			"b put b1: ok",
			"a get a3: hit", "a put a4: ok", "a get a1: miss", "a get a3: hit", "b get b1: hit",
		},
		left: []string{"a=2/2", "b=1/1", "store=3/3"},
	}, {
		name: "the byte quota of an owner holds; a result over it is refused",
		opts: SharedResultStoreOptions{MaxBytes: 100, OwnerBytes: 10},
		ops: []storeOp{
			{owner: "a", put: "a1", size: 4, ttl: live}, {owner: "a", put: "a2", size: 4, ttl: live},
			{owner: "a", put: "a3", size: 4, ttl: live}, {owner: "a", put: "a4", size: 11, ttl: live},
			get("a", "a1"), get("a", "a2"), get("a", "a3"),
		},
		want: []string{
			"a put a1: ok", "a put a2: ok", "a put a3: ok", "a put a4: " + ErrResultTooLarge.Error(),
			"a get a1: miss", "a get a2: hit", "a get a3: hit",
		},
		left: []string{"a=2/8", "store=2/8"},
	}, {
		name: "the global byte bound holds",
		opts: SharedResultStoreOptions{MaxBytes: 20, OwnerBytes: 10},
		ops: []storeOp{
			{owner: "a", put: "a1", size: 10, ttl: live}, {owner: "b", put: "b1", size: 6, ttl: live},
			{owner: "c", put: "c1", size: 5, ttl: live}, {owner: "b", put: "b2", size: 4, ttl: live},
			{owner: "b", put: "b3", size: 5, ttl: live},
		},
		want: []string{
			"a put a1: ok", "b put b1: ok", "c put c1: " + ErrResultStoreFull.Error(), "b put b2: ok",
			"b put b3: ok",
		},
		left: []string{"a=1/10", "b=2/9", "c=0/0", "store=3/19"},
	}, {
		name: "closing a view drops its results and frees their room",
		opts: SharedResultStoreOptions{MaxEntries: 3, OwnerEntries: 2},
		ops: []storeOp{
			put("a", "a1", live), put("a", "a2", live), put("c", "c1", live),
			put("b", "b1", live),
			{owner: "a", close: true}, {owner: "a", close: true},
			put("b", "b2", live), get("a", "a1"), put("a", "a3", live), get("c", "c1"),
		},
		want: []string{
			"a put a1: ok", "a put a2: ok", "c put c1: ok",
			"b put b1: " + ErrResultStoreFull.Error(),
			"a close", "a close",
			"b put b2: ok", "a get a1: miss", "a put a3: " + ErrViewClosed.Error(), "c get c1: hit",
		},
		left: []string{"a=0/0", "b=1/1", "c=1/1", "store=2/2"},
	}, {
		name: "a reference is found by any view, and marks its result recently used for its owner",
		opts: SharedResultStoreOptions{MaxEntries: 10, OwnerEntries: 2},
		ops: []storeOp{
			put("a", "a1", live), put("a", "a2", live), get("b", "a1"),
			put("a", "a3", live), get("a", "a1"), get("a", "a2"),
		},
		want: []string{
			"a put a1: ok", "a put a2: ok", "b get a1: hit",
			"a put a3: ok", "a get a1: hit", "a get a2: miss",
		},
		left: []string{"a=2/2", "b=0/0", "store=2/2"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			clock := newFakeClock()
			opts := tt.opts
			opts.Now = clock.Now
			s := NewSharedResultStore(&opts)
			views := map[string]*ResultView{}
			var owners []string
			view := func(name string) *ResultView {
				if views[name] == nil {
					views[name] = s.View()
					owners = append(owners, name)
				}
				return views[name]
			}
			refs := map[string]string{} // label → ref
			var got []string
			for _, op := range tt.ops {
				switch {
				case op.advance != 0:
					clock.Advance(op.advance)
					continue
				case op.close:
					view(op.owner).Close()
					got = append(got, op.owner+" close")
				case op.put != "":
					data := []byte(strings.Repeat(op.put[:1], max(op.size, 1)))
					var ref string
					var err error
					if op.ttl == 0 {
						ref, err = view(op.owner).Put(ctx, data)
					} else {
						ref, err = view(op.owner).PutTTL(ctx, data, op.ttl)
					}
					res := "ok"
					if err != nil {
						res = err.Error()
					} else {
						refs[op.put] = ref
					}
					got = append(got, fmt.Sprintf("%s put %s: %s", op.owner, op.put, res))
				case op.get != "":
					b, ok := view(op.owner).Get(ctx, refs[op.get])
					res := "miss"
					if ok {
						res = "hit"
						if b[0] != op.get[0] {
							t.Errorf("%s got the bytes %q", op.get, b)
						}
					}
					got = append(got, fmt.Sprintf("%s get %s: %s", op.owner, op.get, res))
				}
				checkBounds(t, s, views)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
			var left []string
			slices.Sort(owners)
			for _, o := range owners {
				n, b := views[o].Len()
				left = append(left, fmt.Sprintf("%s=%d/%d", o, n, b))
			}
			n, b := s.Len()
			left = append(left, fmt.Sprintf("store=%d/%d", n, b))
			if diff := cmp.Diff(tt.left, left); diff != "" {
				t.Errorf("left (-want +got):\n%s", diff)
			}
		})
	}
}

// checkBounds fails t unless the store and every view are within their
// limits and the views' totals add up to the store's.
func checkBounds(t *testing.T, s *SharedResultStore, views map[string]*ResultView) {
	t.Helper()
	n, b := s.Len()
	if n > s.maxEntries || b > s.maxBytes {
		t.Fatalf("store holds %d entries, %d bytes; limits %d, %d", n, b, s.maxEntries, s.maxBytes)
	}
	var sn, sb int
	for name, v := range views {
		vn, vb := v.Len()
		if vn > s.ownerEntries || vb > s.ownerBytes {
			t.Fatalf("view %s holds %d entries, %d bytes; quota %d, %d", name, vn, vb, s.ownerEntries, s.ownerBytes)
		}
		sn, sb = sn+vn, sb+vb
	}
	if sn != n || sb != b {
		t.Fatalf("views hold %d entries, %d bytes; the store %d, %d", sn, sb, n, b)
	}
}

func TestSharedStoreDefaults(t *testing.T) {
	s := NewSharedResultStore(nil)
	got := []int{s.maxEntries, s.maxBytes, s.ownerEntries, s.ownerBytes}
	if diff := cmp.Diff([]int{4096, 64 << 20, 256, 4 << 20}, got); diff != "" {
		t.Errorf("limits (-want +got):\n%s", diff)
	}
	// An owner quota over the store's bound is the store's bound.
	s = NewSharedResultStore(&SharedResultStoreOptions{MaxEntries: 2, MaxBytes: 10, OwnerEntries: 5, OwnerBytes: 50})
	got = []int{s.maxEntries, s.maxBytes, s.ownerEntries, s.ownerBytes}
	if diff := cmp.Diff([]int{2, 10, 2, 10}, got); diff != "" {
		t.Errorf("limits (-want +got):\n%s", diff)
	}
}

// TestSharedStoreConcurrent floods a store from many goroutines, each its
// own owner, while one owner's live results must all survive; run it with
// -race.
func TestSharedStoreConcurrent(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	s := NewSharedResultStore(&SharedResultStoreOptions{MaxEntries: 64, MaxBytes: 4 << 10, OwnerEntries: 8, OwnerBytes: 512, Now: clock.Now})
	keep := s.View()
	var kept []string
	for i := range 8 {
		ref, err := keep.PutTTL(ctx, []byte("kept"+strconv.Itoa(i)), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, ref)
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			v := s.View()
			defer v.Close()
			var mine []string
			for i := range 200 {
				ref, err := v.PutTTL(ctx, make([]byte, 1+(g*7+i)%100), time.Duration(i%3)*time.Second)
				if err == nil {
					mine = append(mine, ref)
				} else if !errors.Is(err, ErrResultStoreFull) {
					t.Error(err)
					return
				}
				if len(mine) > 0 {
					v.Get(ctx, mine[len(mine)/2])
				}
				if i%50 == 0 {
					clock.Advance(time.Second)
				}
				if n, b := s.Len(); n > 64 || b > 4<<10 {
					t.Errorf("store holds %d entries, %d bytes", n, b)
					return
				}
			}
		})
	}
	wg.Wait()
	for i, ref := range kept {
		if b, ok := keep.Get(ctx, ref); !ok || string(b) != "kept"+strconv.Itoa(i) {
			t.Errorf("kept result %d: %q, %v", i, b, ok)
		}
	}
	if n, b := s.Len(); n != 8 || b != 8*5 {
		t.Errorf("after every flooder closed the store holds %d entries, %d bytes; want 8, 40", n, b)
	}
}

// TestSessionSharedStore runs two sessions on one SharedResultStore: the one that
// floods never costs the other its saved result within the tool's TTL,
// which the session passes to the store; the old shared MemoryResultStore does.
func TestSessionSharedStore(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	tests := []struct {
		name  string
		store ResultStore
		after time.Duration // from the first call to the flood
		want  []How         // A's second call, then A's call after Close
	}{
		{"shared store, within the TTL", NewSharedResultStore(&SharedResultStoreOptions{MaxEntries: 8, OwnerEntries: 8, Now: clock.Now}), 0, []How{HowReused, HowRan}},
		{"shared store, at the TTL and its margin", NewSharedResultStore(&SharedResultStoreOptions{MaxEntries: 8, OwnerEntries: 8, Now: clock.Now}), 61 * time.Second, []How{HowReused, HowRan}},
		{"memory store, within the TTL", NewMemoryResultStore(8, 0), 0, []How{HowRan, HowReused}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The ledgers run on the real clock: the result is always
			// within its TTL for them, whatever the store's clock says.
			a, _ := NewSession(quoteSet(t), &SessionOptions{Results: tt.store})
			b, _ := NewSession(quoteSet(t), &SessionOptions{Results: tt.store})
			runs := 0
			run := func(context.Context) ([]byte, preflight.Outcome, error) {
				runs++
				return []byte(`{"run":` + strconv.Itoa(runs) + `}`), "", nil
			}
			call := func(s *Session, sym string) How {
				t.Helper()
				ans, err := s.Call(ctx, "quote", json.RawMessage(`{"symbol":"`+sym+`"}`), run)
				if err != nil {
					t.Fatal(err)
				}
				return ans.How
			}
			call(a, "A")
			clock.Advance(tt.after)
			for i := range 40 {
				call(b, "B"+strconv.Itoa(i))
			}
			got := []How{call(a, "A")}
			a.Close()
			got = append(got, call(a, "A"))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("A's calls (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSessionSharedStoreTTLPassed(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	store := NewSharedResultStore(&SharedResultStoreOptions{MaxEntries: 8, OwnerEntries: 8, Now: clock.Now})
	a, _ := NewSession(quoteSet(t), &SessionOptions{Results: store})
	b, _ := NewSession(quoteSet(t), &SessionOptions{Results: store})
	run := func(context.Context) ([]byte, preflight.Outcome, error) { return []byte(`{}`), "", nil }
	if _, err := a.Call(ctx, "quote", json.RawMessage(`{"symbol":"A"}`), run); err != nil {
		t.Fatal(err)
	}
	flood := func() (entries int) {
		for i := range 20 {
			b.Call(ctx, "quote", json.RawMessage(`{"symbol":"B`+strconv.Itoa(i)+`"}`), run)
		}
		n, _ := store.Len()
		return n
	}
	// The tool's TTL is 60 s, kept with a margin of ttlMargin: at 61 s the
	// result is live, one nanosecond later it may make room.
	clock.Advance(60*time.Second + ttlMargin)
	if n := flood(); n != 8 {
		t.Fatalf("store holds %d entries, want 8", n)
	}
	if n, _ := a.view.Len(); n != 1 {
		t.Fatalf("A's result went within its TTL")
	}
	clock.Advance(time.Nanosecond)
	flood()
	if n, _ := a.view.Len(); n != 0 {
		t.Fatalf("A's result past its TTL held its room against B")
	}
}

// TestSessionSharedStoreSharedHistory: sessions that share their history
// (one agent.LedgerStore) reuse each other's results through their views, as
// they did with one MemoryResultStore.
func TestSessionSharedStoreSharedHistory(t *testing.T) {
	ctx := context.Background()
	store, history := NewSharedResultStore(nil), agent.NewMemoryLedgerStore(nil)
	runs := 0
	run := func(context.Context) ([]byte, preflight.Outcome, error) { runs++; return []byte(`{}`), "", nil }
	var got []How
	for range 2 {
		s, err := NewSession(quoteSet(t), &SessionOptions{Results: store, Guard: agent.GuardOptions{Store: history}})
		if err != nil {
			t.Fatal(err)
		}
		ans, err := s.Call(ctx, "quote", json.RawMessage(`{"symbol":"A"}`), run)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ans.How)
	}
	if diff := cmp.Diff([]How{HowRan, HowReused}, got); diff != "" {
		t.Errorf("the two sessions' calls (-want +got):\n%s", diff)
	}
}

// TestSessionCoalescesWhenStoreFull: when the store refuses the leader's
// result (full of another session's live results), the identical calls
// waiting on it still get it, and nothing runs twice.
func TestSessionCoalescesWhenStoreFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := NewSharedResultStore(&SharedResultStoreOptions{MaxEntries: 1})
		if _, err := store.View().PutTTL(ctx, []byte("other"), time.Hour); err != nil {
			t.Fatal(err)
		}
		s, _ := NewSession(quoteSet(t), &SessionOptions{Results: store})
		var runs atomic.Int32
		gate := make(chan struct{})
		run := func(context.Context) ([]byte, preflight.Outcome, error) {
			runs.Add(1)
			<-gate
			return []byte(`{"run":1}`), "", nil
		}
		answers := make([]Answer, 3)
		var wg sync.WaitGroup
		for i := range answers {
			wg.Go(func() {
				a, err := s.Call(ctx, "quote", json.RawMessage(`{"symbol":"A"}`), run)
				if err != nil {
					t.Error(err)
				}
				answers[i] = a
			})
			synctest.Wait() // the first runs, the others wait on it
		}
		close(gate)
		wg.Wait()
		var got []string
		for _, a := range answers {
			got = append(got, a.How.String()+" "+string(a.Result))
		}
		want := []string{`ran {"run":1}`, `coalesced {"run":1}`, `coalesced {"run":1}`}
		if diff := cmp.Diff(want, got); diff != "" || runs.Load() != 1 {
			t.Errorf("%d runs; answers (-want +got):\n%s", runs.Load(), diff)
		}
		if n, _ := store.Len(); n != 1 {
			t.Errorf("store holds %d results, want only the other session's", n)
		}
	})
}
