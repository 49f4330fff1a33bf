package preflight

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
					var want []Issue
					for i, item := range seq {
						for _, iss := range validateTest(t, is, item, 100).issues {
							iss.Path = "/request/body/" + strconv.Itoa(i) + strings.TrimPrefix(iss.Path, "/request/body")
							want = append(want, iss)
						}
					}
					doc := "[" + strings.Join(seq, ",") + "]"
					got := validateTest(t, `{"items":`+is+`}`, doc, 100).issues
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("items %s, array %s: failures differ from each item's alone (-alone +array):\n%s", is, doc, diff)
					}
				}
			}
		}
	}
}
