package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// The seed corpora live in testdata/fuzz/FuzzParse and
// testdata/fuzz/FuzzCanonical; a few more seeds are added here.
var fuzzSeeds = []string{
	`{"b":[1,2.50,-0],"a":{"y":null,"x":true}}`,
	`[1e21,1e-7,0.000001,9007199254740993,5e-324]`,
	`{"\u00e9":1,"e":2,"\ud83d\ude00":3,"\uffff":4}`,
}

// walkValues calls fn for t and every value inside it.
func walkValues(t *tree, fn func(*tree)) {
	fn(t)
	for i := range t.Items {
		walkValues(&t.Items[i], fn)
	}
	for i := range t.Members {
		walkValues(&t.Members[i].Value, fn)
	}
}

// FuzzParse checks that Parse never panics, that its errors and spans are
// sane, that it accepts nothing encoding/json calls invalid, and that the
// canonical form of whatever it accepts is valid JSON with the same meaning
// that canonicalizes to itself.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Parse(data, Limits{})
		if err != nil {
			var perr *Error
			if !errors.As(err, &perr) {
				t.Fatalf("Parse returned %T, want *Error", err)
			}
			if perr.Offset < 0 || perr.Offset > len(data) {
				t.Fatalf("error offset %d outside a %d-byte document", perr.Offset, len(data))
			}
			if perr.Kind == ErrSyntax && json.Valid(data) {
				t.Fatalf("Parse reports a syntax error (%v) in a document encoding/json accepts", err)
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("Parse accepted a document encoding/json rejects")
		}
		tv := toTree(v)
		walkValues(&tv, func(x *tree) {
			if x.Start < 0 || x.Start >= x.End || x.End > len(data) {
				t.Fatalf("span [%d,%d) outside a %d-byte document", x.Start, x.End, len(data))
			}
			span := data[x.Start:x.End]
			switch x.Kind {
			case Number:
				if string(span) != x.Str {
					t.Fatalf("number text %q, span holds %q", x.Str, span)
				}
				fast, fastSt := appendNumberText(nil, x.Str)
				slow, slowSt := appendNumberSlow(nil, x.Str)
				if !bytes.Equal(fast, slow) || fastSt != slowSt {
					t.Fatalf("number %q: fast path %q, full parse %q", x.Str, fast, slow)
				}
			case String:
				var s string
				if err := json.Unmarshal(span, &s); err != nil || s != x.Str {
					t.Fatalf("string span %q decodes to %q (%v), Parse gave %q", span, s, err, x.Str)
				}
			}
		})

		c1, err := AppendCanonical(nil, v)
		if err != nil {
			t.Fatalf("a parsed value failed to canonicalize: %v", err)
		}
		if rebuilt := appendCanonicalRebuilt(t, v); !bytes.Equal(rebuilt, c1) {
			t.Fatalf("copying text marked canonical gave %q; rebuilding every value gave %q", c1, rebuilt)
		}
		v2, err := Parse(c1, Limits{})
		if err != nil {
			t.Fatalf("canonical output %q does not parse: %v", c1, err)
		}
		c2, err := AppendCanonical(nil, v2)
		if err != nil || !bytes.Equal(c1, c2) {
			t.Fatalf("not idempotent:\nfirst  %q\nsecond %q (%v)", c1, c2, err)
		}
		var a, b any
		if err := json.Unmarshal(data, &a); err != nil {
			var typeErr *json.UnmarshalTypeError
			if errors.As(err, &typeErr) {
				return // a number beyond float64, kept as written; nothing to compare with
			}
			t.Fatalf("encoding/json cannot decode the input: %v", err)
		}
		if err := json.Unmarshal(c1, &b); err != nil {
			t.Fatalf("encoding/json cannot decode the canonical form: %v", err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("canonical form %q means something else than the input", c1)
		}
	})
}

// appendCanonicalRebuilt is AppendCanonical without the shortcut for text
// the parser marked as canonical as written: every value is rebuilt.
func appendCanonicalRebuilt(t *testing.T, v Value) []byte {
	t.Helper()
	e := &encoder{noVerbatim: true}
	if err := e.value(v); err != nil {
		t.Fatalf("rebuilding the canonical form: %v", err.finish())
	}
	return e.buf
}

// FuzzCanonical checks that the canonical form does not depend on member
// order, is a fixed point, and lists members in UTF-16 order.
func FuzzCanonical(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Parse(data, Limits{})
		if err != nil {
			return
		}
		c1, err := AppendCanonical(nil, v)
		if err != nil {
			return
		}
		if rebuilt := appendCanonicalRebuilt(t, v); !bytes.Equal(c1, rebuilt) {
			t.Fatalf("copying what the parser marked canonical gave %q, rebuilding every value %q", c1, rebuilt)
		}
		for name, perm := range map[string]func([]treeMember) []treeMember{"reversed": reversed, "rotated": rotated} {
			p := fromTree(t, mapMembers(toTree(v), perm))
			c2, err := AppendCanonical(nil, p)
			if err != nil || !bytes.Equal(c1, c2) {
				t.Fatalf("%s members changed the canonical form:\noriginal %q\n%s %q (%v)", name, c1, name, c2, err)
			}
		}
		v2, err := Parse(c1, Limits{})
		if err != nil {
			t.Fatalf("canonical output %q does not parse: %v", c1, err)
		}
		c3, err := AppendCanonical(nil, v2)
		if err != nil || !bytes.Equal(c1, c3) {
			t.Fatalf("not idempotent:\nfirst  %q\nsecond %q (%v)", c1, c3, err)
		}
		if s, ok := unmarkedString(v2); ok {
			t.Fatalf("canonical output %q has string %q not marked canonical as written", c1, s.Raw())
		}
		tv2 := toTree(v2)
		walkValues(&tv2, func(x *tree) {
			for i := 1; i < len(x.Members); i++ {
				if a, b := x.Members[i-1].Key, x.Members[i].Key; utf16Compare(a, b) >= 0 {
					t.Fatalf("canonical output lists %+q before %+q", a, b)
				}
			}
		})
	})
}

// unmarkedString returns a string of v, a value or member name, that the
// parser did not mark canonical as written.
func unmarkedString(v Value) (Value, bool) {
	switch v.Kind() {
	case String:
		return v, v.n().meta&flagVerbatim == 0
	case Array, Object:
		for it := v.Iter(); it.Next(); {
			if v.Kind() == Object {
				if name := (Value{it.d, it.keyNode()}); name.n().meta&flagVerbatim == 0 {
					return name, true
				}
			}
			if s, ok := unmarkedString(it.Value()); ok {
				return s, true
			}
		}
	}
	return Value{}, false
}
