package pattern

import (
	"math/rand/v2"
	"testing"
)

// TestFixedWords checks the eight-byte tests of fixed sequences against
// the byte-by-byte ones, on random sequences of random ASCII sets and
// texts that are near misses of them, including bytes beyond ASCII.
func TestFixedWords(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 2026))
	edges := []int{0, 1, '0', '9', 'A', 'Z', 'a', 'z', 0x3e, 0x3f, 0x40, 0x41, 0x7e, 0x7f} // 0x40: where a set's two words meet
	pick := func() int {
		if r.IntN(2) == 0 {
			return edges[r.IntN(len(edges))]
		}
		return r.IntN(128)
	}
	words, checked := 0, 0
	perSeen := map[int]int{} // sequences by terms per word: 1, 2 and 3 have loops of their own
	for range 3000 {
		var sets [fixedSets][2]uint64
		nsets := 1 + r.IntN(fixedSets)
		for k := range nsets {
			for range 1 + r.IntN(4) {
				lo := pick()
				hi := min(lo+r.IntN(12), 127)
				for c := lo; c <= hi; c++ {
					sets[k][c>>6] |= 1 << (c & 63)
				}
			}
		}
		at := make([]uint8, 8+r.IntN(40))
		for i := range at {
			at[i] = uint8(r.IntN(nsets))
		}
		if r.IntN(2) == 0 {
			// Runs of one set, as counted repetitions write them: words
			// of one set throughout, and words that repeat the one before.
			for i := 0; i < len(at); {
				k, run := uint8(r.IntN(nsets)), 1+r.IntN(20)
				for ; run > 0 && i < len(at); run-- {
					at[i] = k
					i++
				}
			}
		}
		f := new(fixedSeq)
		f.init(at, sets, nsets, false)
		if f.nwords == 0 {
			continue
		}
		bytewise := fixedSeq{n: len(at), at: at, sets: sets}
		words++
		perSeen[min(f.per, 4)]++
		for range 20 {
			b := make([]byte, len(at))
			for i, k := range at {
				for { // a byte of the position's set
					c := r.IntN(128)
					if inSet(sets[k], c) {
						b[i] = byte(c)
						break
					}
				}
			}
			for range r.IntN(3) { // near misses
				b[r.IntN(len(b))] = byte(r.IntN(256))
			}
			s := string(b)
			if got, want := f.match(s), bytewise.matchBytes(s); got != want {
				t.Fatalf("sets %x at %v on %q: words %v, bytes %v", sets[:nsets], at, s, got, want)
			}
			checked++
		}
	}
	if words < 1000 {
		t.Fatalf("only %d sequences had word tests", words)
	}
	for per := 1; per <= 4; per++ {
		if perSeen[per] < 50 {
			t.Fatalf("only %d sequences with %d terms per word (4: more)", perSeen[per], per)
		}
	}
	t.Logf("%d sequences with word tests, %d texts", words, checked)
}

// inSet reports whether the ASCII byte c is in the bitmap set.
func inSet(set [2]uint64, c int) bool { return set[c>>6]>>(c&63)&1 != 0 }
