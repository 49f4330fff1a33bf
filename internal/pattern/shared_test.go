package pattern

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
)

// TestSharedCountsAsMatchBudget runs texts through MatchBudgetShared as
// many validations of one kept schema do (a fresh State every few texts,
// the pattern's warm DFA carried across them) and checks every answer
// and count against MatchBudget with a State of its own: the warm DFA may
// change what a match costs in time, never what it answers or counts.
// Small cache bounds make the warm DFA clear itself; many of the random
// patterns outgrow WarmBytes, so dropping the warm DFA is covered too.
func TestSharedCountsAsMatchBudget(t *testing.T) {
	defer func(s, k int) { maxDFAStates, maxDFAKernels = s, k }(maxDFAStates, maxDFAKernels)
	for _, limits := range [][2]int{{maxDFAStates, maxDFAKernels}, {6, 1 << 18}, {1 << 12, 24}} {
		maxDFAStates, maxDFAKernels = limits[0], limits[1]
		t.Run(fmt.Sprintf("cache=%d,%d", limits[0], limits[1]), func(t *testing.T) {
			r := rand.New(rand.NewPCG(37, 38))
			dropped, runs := 0, 0
			for _, j := range patternJobs(r, 1500, 6) {
				for _, q := range j.ps {
					for _, p := range []*Pattern{q, general(q)} {
						var own, shared State
						for k := range 80 {
							if k%7 == 0 { // the next validation
								own, shared = State{}, State{}
							}
							s := j.in[r.IntN(len(j.in))]
							budget := math.MaxInt
							if k%5 == 4 {
								budget = r.IntN(4 * (len(s) + 1) * len(p.insts))
							}
							m0, w0, ok0 := p.MatchBudget(&own, s, budget)
							m1, w1, ok1 := p.MatchBudgetShared(&shared, s, budget)
							if ok0 != ok1 || w0 != w1 || ok0 && m0 != m1 {
								t.Fatalf("%q, text %d %q, budget %d: shared %v, %d, %v; MatchBudget %v, %d, %v", j.src, k, s, budget, m1, w1, ok1, m0, w0, ok0)
							}
						}
						if p.warmOff {
							dropped++
						} else if p.warm != nil && p.warm.bytes() > WarmBytes {
							t.Fatalf("%q keeps a warm DFA of %d bytes, over %d", j.src, p.warm.bytes(), WarmBytes)
						}
						runs++
					}
				}
			}
			t.Logf("%d patterns, %d gave up their warm DFA", runs, dropped)
		})
	}
}

// TestSharedConcurrent matches one pattern from many goroutines at once:
// those that find the warm DFA busy run the Pike VM, and every answer and
// count is MatchBudget's (run with -race).
func TestSharedConcurrent(t *testing.T) {
	p, _, err := Compile(`^[^@\s]+@[^@\s]+\.[a-z]{2,}$`, 3000)
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"agent@acme.example", "bob(at)example.org", "alice@example.com", "a@b", "é@ü.de", ""}
	want := make([][2]int, len(texts))
	for i, s := range texts {
		m, w, _ := p.MatchBudget(new(State), s, math.MaxInt)
		want[i] = [2]int{b2i(m), w}
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 500 {
				i := (g + k) % len(texts)
				m, w, ok := p.MatchBudgetShared(new(State), texts[i], math.MaxInt)
				if !ok || [2]int{b2i(m), w} != want[i] {
					t.Errorf("%q: shared %v, %d; want %v", texts[i], m, w, want[i])
					return
				}
			}
		}()
	}
	wg.Wait()
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
