package reqid

import (
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"testing"
)

// TestNewFresh: without a sane incoming id, every id is 32 lower-case hex
// digits and none repeats; the digits are spread (no fixed nibble).
func TestNewFresh(t *testing.T) {
	generated := regexp.MustCompile(`^[0-9a-f]{32}$`)
	seen := map[string]bool{}
	var nibbles [32][16]int
	const n = 20000
	for range n {
		id := New("")
		if !generated.MatchString(id) {
			t.Fatalf("id %q, want 32 lower-case hex digits", id)
		}
		if seen[id] {
			t.Fatalf("id %q repeated", id)
		}
		seen[id] = true
		for i := range id {
			v, _ := hex.DecodeString("0" + id[i:i+1])
			nibbles[i][v[0]]++
		}
	}
	for i, counts := range nibbles {
		for d, c := range counts {
			if c < n/16/2 || c > n/16*2 {
				t.Errorf("position %d: digit %x appears %d times in %d ids, want about %d", i, d, c, n, n/16)
			}
		}
	}
}

// cryptoNew is New as it was, the id read from crypto/rand, kept for
// BenchmarkNew's comparison.
func cryptoNew() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// BenchmarkNew compares a fresh id from math/rand/v2 (New) with one from
// crypto/rand, side by side.
func BenchmarkNew(b *testing.B) {
	b.Run("math-rand-v2", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			New("")
		}
	})
	b.Run("crypto-rand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			cryptoNew()
		}
	})
}
