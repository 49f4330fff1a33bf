package strictjson

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf16"

	"github.com/google/go-cmp/cmp"
)

// canon parses doc and returns its canonical form.
func canon(t testing.TB, doc string) string {
	t.Helper()
	v, err := Parse([]byte(doc), Limits{})
	if err != nil {
		t.Fatalf("Parse(%q): %v", doc, err)
	}
	out, err := AppendCanonical(nil, v)
	if err != nil {
		t.Fatalf("AppendCanonical(%q): %v", doc, err)
	}
	return string(out)
}

func TestAppendCanonical(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want string
	}{
		{
			name: "RFC 8785 section 3.2.2 sample: numbers, string escapes, literals",
			doc: `{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`,
			want: `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],` +
				`"string":"€$\u000f\nA'B\"\\\\\"/"}`,
		},
		{
			name: "RFC 8785 section 3.2.3 sample: UTF-16 member order",
			doc: `{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`,
			want: "{" +
				`"\r":"Carriage Return",` +
				`"1":"One",` +
				"\"\u0080\":\"Control\"," +
				"\"\u00f6\":\"Latin Small Letter O With Diaeresis\"," +
				"\"\u20ac\":\"Euro Sign\"," +
				"\"\U0001F600\":\"Emoji: Grinning Face\"," +
				"\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"" +
				"}",
		},
		{
			name: "section 3.2.3 keys plus an HTML-looking key, which is not escaped",
			doc:  `{"\u20ac":1,"\r":2,"\ufb33":3,"1":4,"\ud83d\ude00":5,"\u0080":6,"\u00f6":7,"<\/script>":8}`,
			want: "{\"\\r\":2,\"1\":4,\"</script>\":8,\"\u0080\":6,\"\u00f6\":7,\"\u20ac\":1,\"\U0001F600\":5,\"\ufb33\":3}",
		},
		{
			name: "every control character escape and what stays literal",
			doc:  `"\u0000\u0001\u001f\b\t\n\f\r\u000b \"\\\/\u007f\u2028\u00e9"`,
			want: `"\u0000\u0001\u001f\b\t\n\f\r\u000b \"\\/` + "\u007f\u2028\u00e9" + `"`,
		},
		{
			name: "white space removed, array order kept",
			doc:  " [ 3 , 1 ,\n\t2 , [ ] , { } ] ",
			want: `[3,1,2,[],{}]`,
		},
		{
			name: "nested objects sorted at every level",
			doc:  `{"b":{"z":1,"y":[{"d":0,"c":0}]},"a":null}`,
			want: `{"a":null,"b":{"y":[{"c":0,"d":0}],"z":1}}`,
		},
		{
			name: "prefix sorts first",
			doc:  `{"ab":1,"a":2,"":3}`,
			want: `{"":3,"a":2,"ab":1}`,
		},
		{
			name: "supplementary character sorts before U+E000..U+FFFF",
			doc:  `{"\uffff":1,"\ue000":2,"\ud800\udc00":3,"\ud7ff":4}`,
			want: "{\"\ud7ff\":4,\"\U00010000\":3,\"\ue000\":2,\"\uffff\":1}",
		},
		{
			name: "numbers in all positions",
			doc:  `{"n":[-0,1.0,1e2,-1.5E-7,100e-2,9007199254740993]}`,
			want: `{"n":[0,1,100,-1.5e-7,1,9007199254740993]}`,
		},
		{
			// The rule for plain integers is what RFC 8785 would write,
			// not whether a double holds the value: 2^64 is a double, but
			// ECMAScript writes it 18446744073709552000, another integer
			// (which keeps that spelling). 2^53 and 10^22 are written as
			// RFC 8785 writes them.
			name: "plain integers that RFC 8785 would write as another integer are kept",
			doc:  `[18446744073709551616,18446744073709552000,-18446744073709551616,9007199254740992,10000000000000000000000,1.8446744073709551616e19]`,
			want: `[18446744073709551616,18446744073709552000,-18446744073709551616,9007199254740992,1e+22,18446744073709552000]`,
		},
		{
			name: "large object takes the general sort",
			doc:  `{"q":1,"p":2,"o":3,"n":4,"m":5,"l":6,"k":7,"j":8,"i":9,"h":10,"g":11,"f":12,"e":13,"d":14,"c":15,"b":16,"a":17,"\ud83d\ude00":18,"\uffee":19}`,
			want: "{\"a\":17,\"b\":16,\"c\":15,\"d\":14,\"e\":13,\"f\":12,\"g\":11,\"h\":10,\"i\":9,\"j\":8,\"k\":7,\"l\":6,\"m\":5,\"n\":4,\"o\":3,\"p\":2,\"q\":1,\"\U0001F600\":18,\"\uffee\":19}",
		},
		{name: "top-level string", doc: `"x"`, want: `"x"`},
		{name: "top-level number", doc: `1E+2`, want: `100`},
		{name: "top-level literal", doc: `true`, want: `true`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := canon(t, tc.doc)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("canonical form mismatch (-want +got):\n%s", diff)
			}
			// Canonical output is a fixed point.
			if again := canon(t, got); again != got {
				t.Errorf("not idempotent:\nfirst  %s\nsecond %s", got, again)
			}
		})
	}
}

// utf16Compare is the definition RFC 8785 gives: compare names as arrays of
// UTF-16 code units.
func utf16Compare(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

func TestCompareKeysMatchesUTF16(t *testing.T) {
	// Runes at every boundary where UTF-8 length or UTF-16 form changes.
	runes := []rune{0, 'A', 0x7f, 0x80, 0x7ff, 0x800, 0xd7ff, 0xe000, 0xfb33, 0xfffd, 0xffff,
		0x10000, 0x1f600, 0x10ffff}
	var keys []string
	keys = append(keys, "")
	for _, r := range runes {
		keys = append(keys, string(r))
		for _, r2 := range runes {
			keys = append(keys, string([]rune{r, r2}))
		}
	}
	for _, a := range keys {
		for _, b := range keys {
			if got, want := CompareKeys(a, b), utf16Compare(a, b); got != want {
				t.Errorf("CompareKeys(%+q, %+q) = %d, want %d", a, b, got, want)
			}
		}
	}
}

// reverseMembers returns v with the members of every object in reverse
// order.
func reverseMembers(t testing.TB, v Value) Value {
	return fromTree(t, mapMembers(toTree(v), reversed))
}

func TestCanonicalKeyOrderInsensitive(t *testing.T) {
	docs := []string{
		`{"b":1,"a":2,"c":{"y":[{"k":1,"j":2}],"x":0}}`,
		`{"\ufb33":1,"\ud83d\ude00":2,"\u20ac":3,"1":4}`,
		`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13,"n":14,"o":15,"p":16,"q":17,"r":18}`,
	}
	for _, doc := range docs {
		v, err := Parse([]byte(doc), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		want, err := AppendCanonical(nil, v)
		if err != nil {
			t.Fatal(err)
		}
		r := reverseMembers(t, v)
		got, err := AppendCanonical(nil, r)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("reversed members changed the canonical form of %s (-want +got):\n%s", doc, diff)
		}
	}
}

// TestCanonicalBeyondDoubleRange: RFC 8785 cannot represent these numbers,
// so they are written as they appear in the document.
func TestCanonicalBeyondDoubleRange(t *testing.T) {
	for doc, want := range map[string]string{
		`{"a":[1,{"b/c~":1e400}]}`:       `{"a":[1,{"b/c~":1e400}]}`,
		`-2e308`:                         `-2e308`,
		`{"z":1E+999,"list":[0, 1e309]}`: `{"list":[0,1e309],"z":1E+999}`,
	} {
		if got := canon(t, doc); got != want {
			t.Errorf("canonical form of %s = %s, want %s", doc, got, want)
		}
	}
}

func TestCanonicalAppendsToDst(t *testing.T) {
	v, err := Parse([]byte(`{"b":1,"a":2}`), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := AppendCanonical([]byte("sha:"), v)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(`sha:{"a":2,"b":1}`, string(got)); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func TestCanonicalDeepNesting(t *testing.T) {
	const depth = 5000
	var b strings.Builder
	for i := range depth {
		if i%2 == 0 {
			b.WriteString(`[`)
		} else {
			b.WriteString(`{"k":`)
		}
	}
	b.WriteString(`1.0`)
	for i := depth - 1; i >= 0; i-- {
		if i%2 == 0 {
			b.WriteString(`]`)
		} else {
			b.WriteString(`}`)
		}
	}
	doc := b.String()
	want := strings.Replace(doc, "1.0", "1", 1)
	if got := canon(t, doc); got != want {
		t.Errorf("deep document changed: got %d bytes, want %d", len(got), len(want))
	}
}

// benchObjectDoc is a realistic request of about 2 KB: a proposed HTTP
// request with headers, query and a nested body, plus its schema.
func benchObjectDoc() string {
	return `{
  "schema": {
    "type": "object",
    "required": ["model", "messages", "max_tokens"],
    "additionalProperties": false,
    "properties": {
      "model": {"type": "string", "enum": ["small-1", "medium-2", "large-3"]},
      "max_tokens": {"type": "integer", "minimum": 1, "maximum": 8192},
      "temperature": {"type": "number", "minimum": 0, "maximum": 2.0},
      "messages": {
        "type": "array", "minItems": 1, "maxItems": 64,
        "items": {
          "type": "object", "required": ["role", "content"],
          "properties": {
            "role": {"type": "string", "enum": ["system", "user", "assistant"]},
            "content": {"type": "string", "maxLength": 100000}
          }
        }
      }
    }
  },
  "request": {
    "method": "POST",
    "url": "https://api.example.com/v1/messages?beta=tools&region=eu-west-1",
    "headers": {
      "content-type": "application/json",
      "accept": "application/json",
      "x-request-id": "7f3c2a9e-5b1d-4c8e-9a6f-0d2e4b7c1a3f",
      "user-agent": "agent-runtime/4.2.1 (linux; amd64)",
      "anthropic-version": "2023-06-01",
      "x-trace": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    },
    "query": {"beta": "tools", "region": "eu-west-1", "page": 1, "limit": 50},
    "body": {
      "model": "medium-2",
      "max_tokens": 1024,
      "temperature": 0.70,
      "stop_sequences": ["\n\nHuman:", "</answer>"],
      "metadata": {"user_id": "u_8f2a61", "session": "s_91c0", "tags": ["billing", "eu", "priority"]},
      "messages": [
        {"role": "system", "content": "You are a careful assistant. Answer in English and cite the sources you used."},
        {"role": "user", "content": "Summarize the quarterly report: revenue \u20ac12.5M (+8% YoY), costs \u20ac9.1M, margin 27.2%."},
        {"role": "assistant", "content": "Revenue grew 8% year over year to \u20ac12.5M while costs stayed at \u20ac9.1M."},
        {"role": "user", "content": "Now compare it with the previous quarter, and list three risks \ud83d\ude00."}
      ]
    }
  }
}`
}

// benchArrayDoc is an array of 200 small records.
func benchArrayDoc() string {
	return jsonArray(200, func(i int) string {
		return fmt.Sprintf(`{"sku":"SKU-%05d","qty":%d,"price":%d.%02d,"tags":["a","b"],"active":%t,"note":null}`,
			i, i%7+1, i*3, i%100, i%2 == 0)
	})
}

// benchRecordsDoc is an array of 200 records of scalars whose members
// are out of order, like a batch of events.
func benchRecordsDoc() string {
	return jsonArray(200, func(i int) string {
		return fmt.Sprintf(`{"id":"evt_%016d","type":"click","timestamp":"2026-11-18T10:17:%02d.276Z","userId":"0831f746-f61f-4228-b429-%012d","value":%d.%02d}`,
			i, i%60, i, i%90, i%100)
	})
}

// jsonArray returns the JSON array of n items, item(i) the text of the i-th.
func jsonArray(n int, item func(i int) string) string {
	items := make([]string, n)
	for i := range items {
		items[i] = item(i)
	}
	return "[" + strings.Join(items, ",") + "]"
}

func BenchmarkCanonical(b *testing.B) {
	for _, bc := range []struct {
		name string
		doc  string
	}{
		{"object2KB", benchObjectDoc()},
		{"array200", benchArrayDoc()},
		{"records200", benchRecordsDoc()},
	} {
		v, err := Parse([]byte(bc.doc), Limits{})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name+"/append", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.doc)))
			var buf []byte
			for b.Loop() {
				var err error
				buf, err = AppendCanonical(buf[:0], v)
				if err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bc.name+"/append+sum256", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.doc)))
			var buf []byte
			for b.Loop() {
				var err error
				buf, err = AppendCanonical(buf[:0], v)
				if err != nil {
					b.Fatal(err)
				}
				_ = sha256.Sum256(buf)
			}
		})
		b.Run(bc.name+"/parse+append", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.doc)))
			data := []byte(bc.doc)
			var buf []byte
			for b.Loop() {
				v, err := Parse(data, Limits{})
				if err != nil {
					b.Fatal(err)
				}
				buf, err = AppendCanonical(buf[:0], v)
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestCanonicalConcurrentUse(t *testing.T) {
	v, err := Parse([]byte(benchObjectDoc()), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := AppendCanonical(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for range 8 {
		wg.Go(func() {
			for range 50 {
				got, err := AppendCanonical(nil, v)
				if err != nil || !bytes.Equal(got, want) {
					errs <- fmt.Sprintf("concurrent AppendCanonical gave %d bytes, %v", len(got), err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func ExampleAppendCanonical() {
	v, err := Parse([]byte(`{"b": [1.50, -0, 1e21], "a": "\u00e9\n"}`), Limits{})
	if err != nil {
		panic(err)
	}
	out, err := AppendCanonical(nil, v)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(out))
	// Output: {"a":"é\n","b":[1.5,0,1e+21]}
}

// TestVerbatimMark checks which values the parser marks as canonical as
// written (so AppendCanonical copies their text) and that copying gives
// what rebuilding them gives.
func TestVerbatimMark(t *testing.T) {
	tests := []struct {
		doc  string
		want bool
	}{
		{`{"a":1,"b":[true,null,"x"],"c":{}}`, true},
		{`[]`, true},
		{`{"b":1,"a":2}`, false},                   // members out of order
		{`{"a": 1}`, false},                        // white space
		{`[1,2 ]`, false},                          // white space before the close
		{`["a\n"]`, true},                          // an escape RFC 8785 writes alike
		{`["\"\\\b\f\n\r\t\u0000\u001f"]`, true},   // every escape RFC 8785 writes
		{`{"a\tb":1,"b":"\u0007"}`, true},          // in a name too
		{`["a\/b"]`, false},                        // an escape of a character written as is
		{`["\u001F"]`, false},                      // upper-case hex
		{`["\u000a"]`, false},                      // a control character with a short escape
		{`["\u0041"]`, false},                      // a character written as is
		{`["\u00e9"]`, false},                      // an escape of a character written as is
		{`["é",{"A":1,"a":2,"é":3}]`, true},        // UTF-8 as is, members in code-unit order
		{`{"\uffff":1,"😀":2}`, false},              // escapes
		{"{\"\U0001F600\":1,\"\uFFFF\":2}", true},  // UTF-16 order: U+1F600 before U+FFFF
		{"{\"\uFFFF\":1,\"\U0001F600\":2}", false}, // sorted by UTF-8 bytes, not by UTF-16
		{`[1.5,-2,0,0.000001,123456789012345]`, true},
		{`[1.50]`, false},
		{`[-0]`, false},
		{`[1e3]`, false},
		{`[0.0000001]`, false},
		{`[1234567890123456]`, false},
		{`[1.00000000000001]`, true},
		{`[1.000000000000001]`, false},
		{`-1.5`, true},
		{`2.0`, false},
	}
	for _, tt := range tests {
		v, err := Parse([]byte(tt.doc), Limits{})
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.doc, err)
		}
		if got := v.n().meta&flagVerbatim != 0; got != tt.want {
			t.Errorf("%s: marked canonical as written = %v, want %v", tt.doc, got, tt.want)
		}
		copied, err := AppendCanonical(nil, v)
		if err != nil {
			t.Fatalf("AppendCanonical(%q): %v", tt.doc, err)
		}
		if rebuilt := appendCanonicalRebuilt(t, v); !bytes.Equal(copied, rebuilt) {
			t.Errorf("%s: copied %q, rebuilt %q", tt.doc, copied, rebuilt)
		}
	}
}

// TestRecords checks objects of scalars written by record, whose member
// order is reused for the next record with the same names, against
// rebuilding every value.
func TestRecords(t *testing.T) {
	for _, doc := range []string{
		`[{"b":1,"a":2},{"b":3,"a":4},{"a":5,"b":6},{"b":7,"a":8,"c":9},{"b":0}]`,
		`[{"id":"x","type":"a","ts":"1"},{"id":"y","type":"b","ts":"2"}]`,
		`[{"b":"\n","a":1.50},{"b":"x","a":-0},{"b":true,"a":null}]`,
		`[{"\u00e9":1,"e":2},{"é":1,"e":2},{"\u00e9":3,"f":4}]`,
		`[{"b":1,"a":{"y":1,"x":2}},{"b":1,"a":[{"d":1,"c":2}]}]`,
		`[{"z":1,"y":2,"x":3,"w":4,"v":5,"u":6,"t":7,"s":8,"r":9,"q":10,"p":11,"o":12,"n":13,"m":14,"l":15,"k":16}]`,
		`{"outer":{"b":1,"a":2},"inner":[{"b":1,"a":2},{"a":1,"b":2}]}`,
		"[{\"\uFFFF\":1,\"\U0001F600\":2},{\"\uFFFF\":1,\"\U0001F600\":2}]",
	} {
		got := canon(t, doc)
		v, err := Parse([]byte(doc), Limits{})
		if err != nil {
			t.Fatalf("Parse(%s): %v", doc, err)
		}
		if want := appendCanonicalRebuilt(t, v); got != string(want) {
			t.Errorf("%s:\ngot  %s\nwant %s", doc, got, want)
		}
	}
}

// TestRecordNames checks that a record's member order is reused only where
// it sorts the record: names of 1 to 18 bytes differing from the last
// record's in one byte anywhere, names that nameKey cannot order (equal
// first characters, escaped, empty, beyond ASCII), and members apart,
// together and with white space between them. Each array must
// canonicalize to its records canonicalized alone.
func TestRecordNames(t *testing.T) {
	var docs [][]string // arrays of records
	for n := 1; n <= 18; n++ {
		name := strings.Repeat("m", n)
		for i := range n {
			// name sorts before its companion and other after it, so
			// reusing name's order for other would show. "~" sorts last
			// and comes first, so that no record is in order as written
			// (which would be copied whole).
			other, companion := name[:i]+"z"+name[i+1:], name[:i]+"n"
			docs = append(docs,
				[]string{`{"~":0,"` + name + `":1,"` + companion + `":2}`, `{"~":0,"` + other + `":1,"` + companion + `":2}`},
				[]string{`{"~":0,"` + companion + `":1,"` + name + `":2}`, `{"~":0,"` + companion + `":1,"` + other + `":2}`},
				[]string{`{"~":0,"` + name + `":1,"` + companion + `":2}`, `{"~":0,"` + name + `":3,"` + companion + `":4}`,
					`{"~":0,"` + other + `":5,"` + companion + `":6}`})
		}
	}
	docs = append(docs,
		[]string{`{"b":1,"a":2}`, `{"b":3,"\u0061":4}`, `{"\u0062":5,"a":6}`},
		[]string{`{"c":1,"a":2,"b":3}`, `{"c":4,"a":5,"b":6}`},
		[]string{`{"c":1, "a":2, "b":3}`, `{"c":4 ,"a":5,"b" :6}`, `{ "c":4,"a":5,"b":6 }`},
		[]string{`{"d":1,"c":"\n","b":2,"a":3}`, `{"d":1,"c":1.50,"b":2,"a":3}`, `{"d":1e2,"c":-0,"b":2,"a":3}`},
		[]string{`{"b":1,"a":2,"\u00e9":3}`, `{"b":1,"a":2,"é":3}`},
		// The reused order is checked by the names' first two characters
		// (nameKey) where it can be, and by CompareKeys where it cannot.
		[]string{`{"~":0,"b":1,"a":2}`, `{"~":0,"a":1,"b":2}`, `{"~":0,"b":1,"a":2}`},
		// Each after a record whose order would put the last name first:
		// the empty name, an escape and a name of one character.
		[]string{`{"~":0,"b":1,"a":2}`, `{"~":0,"":1,"!":2}`, `{"~":0,"b":1,"a":2}`, `{"~":0,"a":1,"\u007d":2}`,
			`{"~":0,"b":1,"a":2}`, `{"~":0,"a":1,"a!":2}`},
		[]string{`{"~":0,"ab":1,"a":2}`, `{"~":0,"a":1,"ab":2}`, `{"~":0,"ac":1,"a":2}`, `{"~":0,"ab":1,"b":2}`},
		[]string{`{"~":0,"type":1,"typ":2}`, `{"~":0,"typo":1,"type":2}`, `{"~":0,"type":1,"typo":2}`},
		[]string{`{"~":0,"":1,"a":2}`, `{"~":0,"a":1,"":2}`, `{"~":0," ":1,"":2}`},
		// U+FFFF U+FFFF sorts after the other names here, as "~" does
		// after ASCII ones.
		[]string{"{\"\uFFFF\uFFFF\":0,\"\uFFFF\":1,\"\U0001F600\":2}", "{\"\uFFFF\uFFFF\":0,\"\U0001F600\":1,\"\uFFFF\":2}",
			"{\"\uFFFF\uFFFF\":0,\"a\uFFFF\":1,\"a\U0001F600\":2}", "{\"\uFFFF\uFFFF\":0,\"é\":1,\"e\":2}",
			"{\"\uFFFF\uFFFF\":0,\"b\":1,\"é\":2}", "{\"\uFFFF\uFFFF\":0,\"é\":1,\"b\":2}"},
		[]string{`{"~":0,"\u0062":1,"a":2}`, `{"~":0,"b":1,"\u0061":2}`, `{"~":0,"\u0061":1,"b":2}`, `{"~":0,"\u0000":1,"\u0001":2}`},
		// An item that repeats the names of the item before it takes the
		// last order unchecked only when that item was the record written
		// last, not when it held it: here {"d":1,"c":2} sorts the other
		// way round from the items' a and b (1.0 keeps them from being
		// copied whole).
		[]string{`{"a":1.0,"b":{"d":1,"c":2}}`, `{"a":1.0,"b":2}`, `{"a":3.0,"b":4}`},
		[]string{`{"a":1.0,"b":[{"d":1,"c":2}]}`, `{"a":1.0,"b":2}`},
		[]string{`{"b":1,"a":2}`, `{"b":3,"a":4}`, `{"b":5,"a":6}`, `{"a":7.0,"b":8}`, `{"a":7.0,"b":8}`},
	)
	for _, records := range docs {
		doc := "[" + strings.Join(records, ",") + "]"
		var want strings.Builder
		want.WriteByte('[')
		for i, r := range records {
			if i > 0 {
				want.WriteByte(',')
			}
			want.WriteString(canon(t, r))
		}
		want.WriteByte(']')
		if got := canon(t, doc); got != want.String() {
			t.Errorf("%s:\ngot  %s\nwant %s", doc, got, want.String())
		}
	}
}
