package pattern

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestRepeatRow checks that a counted repetition of one instruction, which
// the compiler emits in a row, compiles to the program of its copies
// written out: x{n} as n x's, x{n,} as n-1 x's and x+, x{n,m} as n x's
// and x{0,m-n}.
func TestRepeatRow(t *testing.T) {
	// Atoms whose copies share their ranges when written out too: a
	// bracket class written twice is two classes.
	atoms := []string{`\d`, `[0-9]`, `\w`, `\s`, `a`, `.`, `\p{L}`, `é`, `\u{1F600}`, `[\s\S]`}
	for _, x := range atoms {
		for _, n := range []int{1, 2, 3, 8, 12} {
			row, num := strings.Repeat(x, n), strconv.Itoa(n)
			for _, c := range [][2]string{
				{"^" + x + "{" + num + "}$", "^" + row + "$"},
				{"a" + x + "{" + num + "}b", "a" + row + "b"},
				{x + "{" + num + ",}", strings.Repeat(x, n-1) + x + "+"},
				{x + "{" + num + "," + strconv.Itoa(n+3) + "}z", row + x + "{0,3}z"},
			} {
				p, _, err := Compile(c[0], 5000)
				q, _, err2 := Compile(c[1], 5000)
				if err != nil || err2 != nil {
					t.Fatalf("%s: %v; %s: %v", c[0], err, c[1], err2)
				}
				if !slices.Equal(p.insts, q.insts) || !slices.Equal(p.runes, q.runes) || p.start != q.start {
					t.Errorf("%s compiles to\n%v %v\nand %s to\n%v %v", c[0], p.insts, p.runes, c[1], q.insts, q.runes)
				}
			}
		}
	}
	// Past the limit mid-row: refused with the same size as before.
	for limit := 2; limit < 20; limit++ {
		if _, size, err := Compile(`^[0-9a-f]{12}$`, limit); (err == nil) != (limit >= 16) || err != nil && size <= limit {
			t.Errorf("limit %d: size %d, %v", limit, size, err)
		}
	}
}
