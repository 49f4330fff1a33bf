package strictjson

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// scratchDocs are documents of every shape the tape holds: records that
// repeat their names, escapes, nesting and scalars.
var scratchDocs = []string{
	`{"a":1,"b":[true,false,null],"c":{"d":"e\u00e9"}}`,
	`[{"id":1,"n":"x"},{"id":2,"n":"y"},{"id":3,"n":"z\n"}]`,
	`"just a string"`,
	`[[[[1]]],{"":{"":[]}}]`,
	`{"k":` + `[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20]` + `}`,
}

// parsedAll returns what a test can read of v: its tree, its canonical
// form and the RepeatsNames mark of every array item.
func parsedAll(t *testing.T, v Value) (tree, string, []bool) {
	t.Helper()
	canon, err := AppendCanonical(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	var repeats []bool
	var walk func(Value)
	walk = func(v Value) {
		for it := v.Iter(); it.Next(); {
			if v.Kind() == Array {
				repeats = append(repeats, it.Value().RepeatsNames())
			}
			walk(it.Value())
		}
	}
	walk(v)
	return toTree(v), string(canon), repeats
}

func TestParseScratchReadsLikeParse(t *testing.T) {
	var wantTrees []tree // read before any tape is reused
	for _, doc := range scratchDocs {
		v, err := Parse([]byte(doc), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		wantTrees = append(wantTrees, toTree(v))
	}
	var held []Value // scratch trees not yet released
	for round := range 3 {
		for _, doc := range scratchDocs {
			want, err := Parse([]byte(doc), Limits{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseScratch([]byte(doc), Limits{})
			if err != nil {
				t.Fatal(err)
			}
			wt, wc, wr := parsedAll(t, want)
			gt, gc, gr := parsedAll(t, got)
			if diff := cmp.Diff(wt, gt); diff != "" {
				t.Errorf("round %d, %s: tree differs (-Parse +ParseScratch):\n%s", round, doc, diff)
			}
			if wc != gc || !cmp.Equal(wr, gr) {
				t.Errorf("round %d, %s: canonical %s or repeats %v, Parse gave %s and %v", round, doc, gc, gr, wc, wr)
			}
			// Release every other tree at once, so that later documents
			// reuse tapes while earlier trees are still held.
			if round%2 == 0 {
				got.Release()
			} else {
				held = append(held, got)
			}
		}
	}
	// A held tree was never handed to another document.
	for i, v := range held {
		doc := scratchDocs[i%len(scratchDocs)]
		if diff := cmp.Diff(wantTrees[i%len(scratchDocs)], toTree(v)); diff != "" {
			t.Errorf("held tree of %s changed while others were parsed (-want +got):\n%s", doc, diff)
		}
		v.Release()
		v.Release() // a second Release does nothing
	}
}

func TestReleasedTreePanics(t *testing.T) {
	v, err := ParseScratch([]byte(`{"a":[1,2]}`), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	member, _ := v.Get("a")
	v.Release()
	if _, err := ParseScratch([]byte(`[3,4,5,6]`), Limits{}); err != nil { // may take the tape back
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Error("reading a value of a released tree did not panic")
		}
	}()
	member.Len()
}

func TestReleaseOfParseTreeDoesNothing(t *testing.T) {
	v, err := Parse([]byte(`{"a":[1,2]}`), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	v.Release()
	if a, ok := v.Get("a"); !ok || a.Len() != 2 {
		t.Errorf("after Release, a tree from Parse reads a=%v, %v; want the two items", a.Raw(), ok)
	}
}

func TestParseScratchErrors(t *testing.T) {
	for _, doc := range []string{`{"a":1,"a":2}`, `[1,`, "\"\xff\"", ``} {
		_, want := Parse([]byte(doc), Limits{})
		_, got := ParseScratch([]byte(doc), Limits{})
		if want == nil || got == nil || want.Error() != got.Error() {
			t.Errorf("%q: ParseScratch error %v, Parse error %v", doc, got, want)
		}
	}
}

// FuzzParseScratch: a tree from ParseScratch reads as the tree from Parse
// does, and stays so while other documents, failing ones included, are
// parsed into reused tapes and released around it.
func FuzzParseScratch(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), []byte(`[1,{"a":"b"}]`))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		lim := Limits{MaxDepth: 64}
		wantA, errA := Parse(a, lim)
		wantB, errB := Parse(b, lim)
		var wa, wb tree
		if errA == nil {
			wa = toTree(wantA)
		}
		if errB == nil {
			wb = toTree(wantB)
		}
		gotA, gerrA := ParseScratch(a, lim)
		if fmt.Sprint(errA) != fmt.Sprint(gerrA) {
			t.Fatalf("ParseScratch(a) error %v, Parse %v", gerrA, errA)
		}
		for range 3 {
			gotB, gerrB := ParseScratch(b, lim)
			if fmt.Sprint(errB) != fmt.Sprint(gerrB) {
				t.Fatalf("ParseScratch(b) error %v, Parse %v", gerrB, errB)
			}
			if errB == nil {
				if diff := cmp.Diff(wb, toTree(gotB)); diff != "" {
					t.Fatalf("b reads differently (-Parse +ParseScratch):\n%s", diff)
				}
				want, _ := AppendCanonical(nil, wantB)
				got, _ := AppendCanonical(nil, gotB)
				if string(want) != string(got) {
					t.Fatalf("b canonicalizes to %s, Parse's tree to %s", got, want)
				}
				gotB.Release()
			}
			if _, err := ParseScratch(append(bytes.Clone(b), '['), lim); err == nil { // fails midway
				t.Fatal("a document with a trailing '[' parsed")
			}
		}
		if errA == nil {
			if diff := cmp.Diff(wa, toTree(gotA)); diff != "" {
				t.Fatalf("a, held, changed (-Parse +ParseScratch):\n%s", diff)
			}
			gotA.Release()
		}
	})
}
