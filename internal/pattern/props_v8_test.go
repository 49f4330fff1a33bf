package pattern

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"slices"
	"testing"
)

// TestPropertiesAgreeWithV8 asks node for the code points of \p{…} for
// every property name and value this package accepts, under a prefix and
// an alias of each, and compares them with this package's ranges, code
// point for code point. It finds a table from another Unicode version than V8's and a
// name read as the wrong property.
func TestPropertiesAgreeWithV8(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the property comparison with V8")
	}
	needNode(t)
	t.Parallel() // node takes a while; let the other tests run meanwhile
	bodies := []string{"General_Category=L", "Script=Greek", "Script_Extensions=Grek"}
	for name := range generalCategories {
		bodies = append(bodies, name, "gc="+name)
	}
	for name := range scripts {
		bodies = append(bodies, "sc="+name, "Script_Extensions="+name)
	}
	for alias := range scriptAliases {
		bodies = append(bodies, "Script="+alias, "scx="+alias)
	}
	for name := range binaryProperties {
		bodies = append(bodies, name)
	}
	for alias := range binaryAliases {
		bodies = append(bodies, alias)
	}
	slices.Sort(bodies)
	in, _ := json.Marshal(bodies)
	cmd := exec.Command("node", "testdata/props.mjs")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var v8 [][]rune
	if err := json.Unmarshal(out, &v8); err != nil || len(v8) != len(bodies) {
		t.Fatalf("node answered %d of %d bodies (%v)", len(v8), len(bodies), err)
	}
	bad := 0
	for i, body := range bodies {
		ours, reason := property(body)
		switch {
		case v8[i] == nil:
			t.Errorf(`\p{%s}: V8 refuses it, this package accepts it`, body)
		case ours == nil:
			t.Errorf(`\p{%s}: V8 accepts it, this package refuses it: %s`, body, reason)
		default:
			if got, want := merged(ours), merged(v8[i]); !slices.Equal(got, want) {
				bad++
				t.Errorf(`\p{%s}: %d ranges, V8 has %d; first difference near U+%04X`, body, len(got)/2, len(want)/2, firstDifference(got, want))
			}
		}
	}
	t.Logf("%d property names and values compared with node's Unicode %s, %d differ", len(bodies), generatedUnicodeVersion, bad)
}

// merged returns the range pairs rs with ranges that touch joined: node
// splits its ranges at the surrogates, and unions of tables here join
// them.
func merged(rs []rune) []rune {
	s := make([]span, 0, len(rs)/2)
	for i := 0; i+1 < len(rs); i += 2 {
		s = append(s, span{rs[i], rs[i+1]})
	}
	return spanRunes(merge(s))
}

// firstDifference returns a code point where range pairs a and b differ.
func firstDifference(a, b []rune) rune {
	for i := 0; i < min(len(a), len(b)); i++ {
		if a[i] != b[i] {
			return min(a[i], b[i])
		}
	}
	if len(a) > len(b) {
		return a[len(b)]
	}
	if len(b) > len(a) {
		return b[len(a)]
	}
	return 0
}
