package pattern

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDFAThrash runs the DFA with a cache of a few states, so that it is
// cleared over and over and searches end in thrash mode, and checks every
// answer against the Pike VM, on generated patterns and inputs.
func TestDFAThrash(t *testing.T) {
	defer func(s, k int) { maxDFAStates, maxDFAKernels = s, k }(maxDFAStates, maxDFAKernels)
	r := rand.New(rand.NewPCG(21, 15))
	for _, limits := range [][2]int{{6, 1 << 18}, {1 << 12, 24}} {
		maxDFAStates, maxDFAKernels = limits[0], limits[1]
		for range 1500 {
			g := gen{r: r}
			n := g.disjunction(3)
			p, _, err := Compile(n.src, 1<<16)
			if err != nil {
				continue
			}
			for range 8 {
				s := n.sample(r) + mutate(r, n.sampleN(r, 3)) + n.sample(r)
				if got, want := p.MatchString(s), p.pikeMatch(s); got != want {
					t.Fatalf("cache %v: pattern %q on %q: DFA %v, Pike VM %v", limits, n.src, s, got, want)
				}
			}
		}
	}
}

// TestConcurrentMatch shares one Pattern between goroutines: a search that
// finds the cache in use builds a cache of its own, and every answer stays
// right (run with -race). The second pattern has a fixed prefix, so its
// goroutines share the pattern that goes on from it too.
func TestConcurrentMatch(t *testing.T) {
	for src, inputs := range map[string]map[string]bool{
		`^[a-z]+\d{2,}\b.*x$`: {"abc12 yx": true, "abc1 yx": false, "abc123x": false, "zz99-x": true},
		`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?:\.\d+)?Z$`: {"2026-11-24T00:49Z": true, "2026-11-24T00:49.5Z": true,
			"2026-11-24T00:49.Z": false, "2026-11-24T00:49": false, "2026-11-24t00:49Z": false},
	} {
		p, _, err := Compile(src, 3000)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan bool)
		for range 4 {
			go func() {
				ok := true
				for range 500 {
					for in, want := range inputs {
						ok = ok && p.MatchString(in) == want
					}
				}
				done <- ok
			}()
		}
		for range 4 {
			if !<-done {
				t.Errorf("%q: a concurrent search gave a wrong answer", src)
			}
		}
	}
}

// TestReusedStateDoesNotThrash matches one long text again and again with
// one State. Each search must cost about what it costs with a fresh
// State: a cache that an earlier search left nearly full must not make a
// later one clear it twice early on and then finish the text without
// building states, the NFA's speed, charged as such.
func TestReusedStateDoesNotThrash(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	b := make([]byte, 1<<16)
	for i := range b {
		b[i] = "ab"[r.IntN(2)]
	}
	s := string(b)
	for _, src := range []string{`[ab]{1,1000}c`, `[ab]{0,1000}$`, `[ab]{1,600}c`} {
		p, _, err := Compile(src, 3000)
		if err != nil {
			t.Fatal(err)
		}
		var fresh State
		want, freshWork, _ := p.MatchBudget(&fresh, s, math.MaxInt)
		var st State
		for i := range 4 {
			got, work, ok := p.MatchBudget(&st, s, math.MaxInt)
			if !ok || got != want {
				t.Fatalf("%q search %d: got %v (ok %v), want %v", src, i, got, ok, want)
			}
			if work > 2*freshWork {
				t.Errorf("%q search %d with a reused State cost %d units, with a fresh one %d", src, i, work, freshWork)
			}
		}
	}
}
