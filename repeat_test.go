package preflight

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentpreflight/preflight/strictjson"
)

// TestItemsWithRepeatedNames: an item of an array whose member names repeat
// those of the item before it is validated with what the walk learnt from
// that item (validator.items). Whatever the items, each must get exactly
// the failures it gets when validated alone, in the same order.
func TestItemsWithRepeatedNames(t *testing.T) {
	itemSchemas := []string{
		`{"type":"object","required":["a","c"],"properties":{"a":{"type":"integer"},"b":{"enum":["x","y"]}},"additionalProperties":false}`,
		`{"properties":{"a":{"minimum":0}},"additionalProperties":{"type":"string"}}`,
		`{"required":["a"],"properties":{"a":{"items":{"properties":{"b":{"type":"string"}},"required":["b"]}}}}`,
		`{"items":{"items":{"properties":{"a":{"type":"string"}},"required":["a"]}}}`, // arrays deeper than the kept depths
		`{"properties":{"a":{"properties":{"a":{"type":"string"}},"required":["b"]}}}`,
		`{"required":["a","a2","a3"],"properties":{"a":{"type":"integer"}}}`, // required names that are not properties
		`{}`,
	}
	items := []string{
		`{"a":1,"b":"x"}`, `{"a":"1","b":"z"}`, `{"a":1,"b":"x","c":2}`, `{"b":"x","a":1}`, `{"a":1}`,
		`{"a":-1,"d":3}`, `{"a":-1,"d":"3"}`, `{"a":[{"b":1},{"b":"2"},{"c":1}]}`, `{"a":[{"b":"1"},{"b":2}]}`,
		`[[{"a":1},{"a":"x"}],[{"b":1}]]`, `[[{"b":1}],[{"b":1},{"a":2}]]`, `{"a":{"a":1}}`, `{"a":{"a":"x","b":0}}`,
		`"s"`, `{}`, `{"c":1}`, `{"b":"y"}`, `{"a2":0,"a":0.5}`, `{"a":0.5,"a2":0}`, `{"a\u0032":0,"a":1}`,
	}
	for _, is := range itemSchemas {
		for _, first := range items {
			for _, second := range items {
				for _, seq := range [][]string{{first, second}, {first, first, second}, {second, first, first}} {
					checkItemsAlone(t, is, seq)
				}
			}
		}
	}
}

// checkItemsAlone validates the array of items under {"items":itemSchema}
// and each item alone under itemSchema, and requires the same failures.
func checkItemsAlone(t *testing.T, itemSchema string, items []string) {
	t.Helper()
	var want []Issue
	for i, item := range items {
		for _, iss := range validateTest(t, itemSchema, item, 1000).issues {
			iss.Path = "/request/body/" + strconv.Itoa(i) + strings.TrimPrefix(iss.Path, "/request/body")
			want = append(want, iss)
		}
	}
	if len(want) >= 1000 {
		return // the array's list would be truncated where the items' are not
	}
	doc := "[" + strings.Join(items, ",") + "]"
	got := validateTest(t, `{"items":`+itemSchema+`}`, doc, 1000).issues
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("items %s, array %s: failures differ from each item's alone (-alone +array):\n%s", itemSchema, doc, diff)
	}
}

// FuzzItemsWithRepeatedNames is TestItemsWithRepeatedNames over any item
// schema and any array of items.
func FuzzItemsWithRepeatedNames(f *testing.F) {
	f.Add(`{"required":["a","c"],"properties":{"a":{"type":"integer"},"b":{"enum":["x","y"]}},"additionalProperties":false}`,
		`[{"a":1,"b":"x"},{"a":"1","b":"z"},{"c":1},{"c":2}]`)
	f.Add(`{"properties":{"a":{"items":{"properties":{"b":{"minimum":0}},"required":["b"]}}}}`,
		`[{"a":[{"b":1},{"b":-1},{"c":1}]},{"a":[{"b":"2"},{"b":2}]},{"a":{}}]`)
	f.Fuzz(func(t *testing.T, itemSchema, array string) {
		s, err := strictjson.Parse([]byte(itemSchema), strictjson.Limits{MaxDepth: 32, MaxNodes: 2000})
		if err != nil || s.Kind() != strictjson.Object {
			return
		}
		if _, cerr := compileSchema(s, "/schema"); cerr != nil {
			return
		}
		v, err := strictjson.Parse([]byte(array), strictjson.Limits{MaxDepth: 32, MaxNodes: 2000})
		if err != nil || v.Kind() != strictjson.Array {
			return
		}
		var items []string
		for it := v.Iter(); it.Next(); {
			items = append(items, it.Value().Raw())
		}
		checkItemsAlone(t, itemSchema, items)
	})
}
