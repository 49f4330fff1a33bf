package preflight

import (
	"encoding/json"
	"errors"
	"github.com/agentpreflight/preflight/internal/pattern"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/strictjson"
	"github.com/google/go-cmp/cmp"
)

// parseTest parses JSON text for a test, failing the test on a syntax error.
func parseTest(t testing.TB, src string) strictjson.Value {
	t.Helper()
	v, err := strictjson.Parse([]byte(src), strictjson.Limits{})
	if err != nil {
		t.Fatalf("parse %s: %v", src, err)
	}
	return v
}

func unsupported(path, keyword string) Issue {
	return Issue{Path: path, Code: IssueUnsupportedSchemaKeyword,
		Message: `keyword "` + keyword + `" is not supported (supported: ` + schemaKeywordList + ")"}
}

func invalid(path, msg string) Issue {
	return Issue{Path: path, Code: IssueInvalidSchema, Message: msg}
}

func TestSchemaCompileErrors(t *testing.T) {
	const typeWant = typeExpectation + ", found "
	tests := []struct {
		name     string
		schema   string
		wantCode ErrorCode
		want     []Issue
	}{
		{"top-level boolean true is not an object", `true`, ErrorInvalidSchema,
			[]Issue{invalid("/schema", "expected the schema to be a JSON object, found boolean")}},
		{"top-level array", `[]`, ErrorInvalidSchema,
			[]Issue{invalid("/schema", "expected the schema to be a JSON object, found array")}},
		{"$schema", `{"$schema":"https://json-schema.org/draft/2020-12/schema"}`, ErrorUnsupportedSchemaKeyword,
			[]Issue{unsupported("/schema/$schema", "$schema")}},
		{"title", `{"title":"x"}`, ErrorUnsupportedSchemaKeyword, []Issue{unsupported("/schema/title", "title")}},
		{"format", `{"format":"email"}`, ErrorUnsupportedSchemaKeyword, []Issue{unsupported("/schema/format", "format")}},
		{"$ref", `{"$ref":"#/$defs/a"}`, ErrorUnsupportedSchemaKeyword, []Issue{unsupported("/schema/$ref", "$ref")}},
		{"description", `{"description":"d"}`, ErrorUnsupportedSchemaKeyword, []Issue{unsupported("/schema/description", "description")}},
		{"default", `{"default":1}`, ErrorUnsupportedSchemaKeyword, []Issue{unsupported("/schema/default", "default")}},
		{"minItems", `{"minItems":1}`, ErrorUnsupportedSchemaKeyword, []Issue{unsupported("/schema/minItems", "minItems")}},
		{"prefixItems", `{"prefixItems":[{}]}`, ErrorUnsupportedSchemaKeyword, []Issue{unsupported("/schema/prefixItems", "prefixItems")}},
		{"the value of an unsupported keyword is not inspected", `{"$defs":{"a":{"format":"x"}}}`, ErrorUnsupportedSchemaKeyword,
			[]Issue{unsupported("/schema/$defs", "$defs")}},
		{"a keyword name with / and ~ is escaped in the pointer", `{"a/b~c":1}`, ErrorUnsupportedSchemaKeyword,
			[]Issue{unsupported("/schema/a~1b~0c", "a/b~c")}},
		{"nested under properties", `{"properties":{"x":{"type":"string","format":"date"}}}`, ErrorUnsupportedSchemaKeyword,
			[]Issue{unsupported("/schema/properties/x/format", "format")}},
		{"nested property name needing escapes", `{"properties":{"a/b":{"title":"t"}}}`, ErrorUnsupportedSchemaKeyword,
			[]Issue{unsupported("/schema/properties/a~1b/title", "title")}},
		{"nested under items and additionalProperties", `{"items":{"properties":{"y":{"$ref":"#"}}},"additionalProperties":{"minItems":2}}`,
			ErrorUnsupportedSchemaKeyword, []Issue{
				unsupported("/schema/items/properties/y/$ref", "$ref"),
				unsupported("/schema/additionalProperties/minItems", "minItems"),
			}},
		{"array-form items", `{"items":[{"type":"string"}]}`, ErrorUnsupportedSchemaKeyword, []Issue{{
			Path: "/schema/items", Code: IssueUnsupportedSchemaKeyword,
			Message: `the array form of "items" is not supported; give one schema for all items`}}},
		{"type misspelled", `{"type":"strnig"}`, ErrorInvalidSchema, []Issue{invalid("/schema/type", typeWant+`"strnig"`)}},
		{"type not a string or array", `{"type":5}`, ErrorInvalidSchema, []Issue{invalid("/schema/type", typeWant+"number")}},
		{"type empty array", `{"type":[]}`, ErrorInvalidSchema, []Issue{invalid("/schema/type", typeWant+"an empty array")}},
		{"type repeated", `{"type":["string","null","string"]}`, ErrorInvalidSchema, []Issue{invalid("/schema/type", typeWant+`"string" twice`)}},
		{"type array with a non-string", `{"type":["string",1]}`, ErrorInvalidSchema, []Issue{invalid("/schema/type", typeWant+"1 at index 1")}},
		{"required not an array", `{"required":"a"}`, ErrorInvalidSchema,
			[]Issue{invalid("/schema/required", "expected an array of unique property names (strings), found string")}},
		{"required with a number", `{"required":["a",1]}`, ErrorInvalidSchema,
			[]Issue{invalid("/schema/required", "expected an array of unique property names (strings), found number at index 1")}},
		{"required repeated", `{"required":["a","b","a"]}`, ErrorInvalidSchema,
			[]Issue{invalid("/schema/required", `expected an array of unique property names (strings), found "a" twice`)}},
		{"properties not an object", `{"properties":[]}`, ErrorInvalidSchema,
			[]Issue{invalid("/schema/properties", "expected an object mapping property names to schemas, found array")}},
		{"a property schema that is a number", `{"properties":{"x":5}}`, ErrorInvalidSchema,
			[]Issue{invalid("/schema/properties/x", "expected a schema (an object or a boolean), found number")}},
		{"items a string", `{"items":"x"}`, ErrorInvalidSchema,
			[]Issue{invalid("/schema/items", "expected a schema (an object or a boolean), found string")}},
		{"additionalProperties null", `{"additionalProperties":null}`, ErrorInvalidSchema,
			[]Issue{invalid("/schema/additionalProperties", "expected a schema (an object or a boolean), found null")}},
		{"enum not an array", `{"enum":{"a":1}}`, ErrorInvalidSchema,
			[]Issue{invalid("/schema/enum", "expected an array of allowed values, found object")}},
		{"minimum a string", `{"minimum":"1"}`, ErrorInvalidSchema, []Issue{invalid("/schema/minimum", "expected a number, found string")}},
		{"maximum null", `{"maximum":null}`, ErrorInvalidSchema, []Issue{invalid("/schema/maximum", "expected a number, found null")}},
		{"minLength negative", `{"minLength":-1}`, ErrorInvalidSchema, []Issue{invalid("/schema/minLength", "expected a non-negative integer, found -1")}},
		{"minLength fractional", `{"minLength":1.5}`, ErrorInvalidSchema, []Issue{invalid("/schema/minLength", "expected a non-negative integer, found 1.5")}},
		{"maxLength a string", `{"maxLength":"2"}`, ErrorInvalidSchema, []Issue{invalid("/schema/maxLength", `expected a non-negative integer, found "2"`)}},
		{"pattern not a string", `{"pattern":5}`, ErrorInvalidSchema,
			[]Issue{invalid("/schema/pattern", "expected a regular expression string, found number")}},
		{"lookahead is not regular", `{"pattern":"(?=x)"}`, ErrorUnsupportedPattern, []Issue{{Path: "/schema/pattern", Code: IssueUnsupportedPattern,
			Message: `lookahead "(?=" at offset 0 is not supported: ` + notRegular}}},
		{"RE2 flags are not ECMA-262", `{"pattern":"a(?i)b"}`, ErrorUnsupportedPattern, []Issue{{Path: "/schema/pattern", Code: IssueUnsupportedPattern,
			Message: `the pattern is not valid ECMA-262 (JavaScript, u flag): invalid group (JavaScript has no inline flags such as (?i) and no (?P<name>…); use (?:…) or (?<name>…)): "(?i" at offset 1`}}},
		{"backreference is not regular", `{"properties":{"p":{"pattern":"(a)\\1"}}}`, ErrorUnsupportedPattern, []Issue{{Path: "/schema/properties/p/pattern",
			Code: IssueUnsupportedPattern, Message: `the back-reference "\\1" at offset 3 is not supported: ` + notRegular}}},
		{"every problem is listed, in document order; keywords win the code", `{"pattern":"(?<=a)","format":"x","type":"strnig"}`,
			ErrorUnsupportedSchemaKeyword, []Issue{
				{Path: "/schema/pattern", Code: IssueUnsupportedPattern, Message: `lookbehind "(?<=" at offset 0 is not supported: ` + notRegular},
				unsupported("/schema/format", "format"),
				invalid("/schema/type", typeWant+`"strnig"`),
			}},
		{"pattern wins the code over ill-formed values", `{"minLength":-1,"pattern":"(a)\\1"}`, ErrorUnsupportedPattern, []Issue{
			invalid("/schema/minLength", "expected a non-negative integer, found -1"),
			{Path: "/schema/pattern", Code: IssueUnsupportedPattern, Message: `the back-reference "\\1" at offset 3 is not supported: ` + notRegular},
		}},
		{"a long keyword name is clipped in the message but not in the pointer", `{"` + strings.Repeat("k", 70) + `":1}`, ErrorUnsupportedSchemaKeyword,
			[]Issue{{Path: "/schema/" + strings.Repeat("k", 70), Code: IssueUnsupportedSchemaKeyword,
				Message: `keyword "` + strings.Repeat("k", 64) + `…" is not supported (supported: ` + schemaKeywordList + ")"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := compileSchema(parseTest(t, tt.schema), "/schema")
			if err == nil {
				t.Fatalf("compileSchema(%s) succeeded, want %s", tt.schema, tt.wantCode)
			}
			if s != nil {
				t.Errorf("compileSchema returned a schema along with an error")
			}
			if err.Code != tt.wantCode {
				t.Errorf("Code = %s, want %s", err.Code, tt.wantCode)
			}
			if diff := cmp.Diff(tt.want, err.Details); diff != "" {
				t.Errorf("Details mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSchemaCompileErrorMessage: compiling a schema alone and decoding a
// check with it choose the same code and message (one priority).
func TestSchemaCompileErrorMessage(t *testing.T) {
	_, err := compileSchema(parseTest(t, `{"format":"x","pattern":"(?<=a)"}`), "/schema")
	_, derr := DecodeCheckRequest([]byte(`{"request":{"method":"POST","url":"https://a.example/"},"schema":{"format":"x","pattern":"(?<=a)"}}`))
	var want *Error
	if !errors.As(derr, &want) {
		t.Fatalf("decoding gave %v, want an *Error", derr)
	}
	if err == nil || err.Code != want.Code || err.Message != want.Message {
		t.Fatalf("compileSchema: %v; decoder: %v", err, want)
	}
	if want.Code != ErrorUnsupportedSchemaKeyword {
		t.Errorf("code %s, want %s", want.Code, ErrorUnsupportedSchemaKeyword)
	}
}

func TestSchemaCompileAccepts(t *testing.T) {
	tests := []struct{ name, schema string }{
		{"empty object", `{}`},
		{"every keyword", `{"type":["object","null"],"required":["a"],"properties":{"a":{"type":"integer","minimum":0,"maximum":10}},
			"items":{"type":"string","minLength":1,"maxLength":3,"pattern":"^a"},"enum":[1,"a",null],"const":{"a":1},
			"additionalProperties":false}`},
		{"enum and const values are data, not schemas", `{"enum":[{"format":"x","$ref":"#"}],"const":{"title":"t"}}`},
		{"property names that look like keywords", `{"properties":{"format":{},"$ref":{"type":"string"},"__proto__":true}}`},
		{"empty enum", `{"enum":[]}`},
		{"lengths written 2.0, 1e2 and 1e400", `{"minLength":2.0,"maxLength":1e400,"properties":{"a":{"maxLength":1e2}}}`},
		{"minLength -0 is zero", `{"minLength":-0}`},
		{"boolean subschemas", `{"properties":{"a":true,"b":false},"items":false,"additionalProperties":true}`},
		{"Unicode property class", `{"pattern":"^\\p{Letter}+$"}`},
		{"many properties and required names", manyPropsSchema(40)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := compileSchema(parseTest(t, tt.schema), "/schema"); err != nil {
				t.Fatalf("compileSchema: %v (details %v)", err, err.Details)
			}
		})
	}
}

func TestMustCompileSchemaPanics(t *testing.T) {
	for _, src := range []string{`{"format":"x"}`, `{`} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("mustCompileSchema(%s) did not panic", src)
				}
			}()
			mustCompileSchema(src)
		}()
	}
}

// validateTest compiles schema and validates instance at /request/body.
func validateTest(t testing.TB, schemaSrc, instance string, max int) issueList {
	t.Helper()
	s, err := compileSchema(parseTest(t, schemaSrc), "/schema")
	if err != nil {
		t.Fatalf("compileSchema(%s): %v %v", schemaSrc, err, err.Details)
	}
	errs := issueList{max: max}
	s.validate(parseTest(t, instance), "/request/body", &errs)
	return errs
}

func TestSchemaValidate(t *testing.T) {
	const body = "/request/body"
	is := func(path string, code IssueCode, msg string) Issue {
		return Issue{Path: path, Code: code, Message: msg}
	}
	long := strings.Repeat("b", 100)
	tests := []struct {
		name, schema, instance string
		want                   []Issue
	}{
		{"type string", `{"type":"string"}`, `12`, []Issue{is(body, IssueType, "expected string, found number")}},
		{"type list", `{"type":["string","null"]}`, `{}`, []Issue{is(body, IssueType, "expected string or null, found object")}},
		{"integer accepts 1.0, 1e2 and -0.0", `{"items":{"type":"integer"}}`, `[1.0,1e2,-0.0,10.50e1]`, nil},
		{"integer rejects 1.5", `{"type":"integer"}`, `1.5`, []Issue{is(body, IssueType, "expected integer, found number 1.5")}},
		{"number accepts an integer", `{"type":"number"}`, `3`, nil},
		{"every kind against null", `{"items":{"type":"null"}}`, `[null,true,"s",[],{}]`, []Issue{
			is(body+"/1", IssueType, "expected null, found boolean"),
			is(body+"/2", IssueType, "expected null, found string"),
			is(body+"/3", IssueType, "expected null, found array"),
			is(body+"/4", IssueType, "expected null, found object"),
		}},
		{"required points where the property would be", `{"required":["sku","qty"]}`, `{"qty":1}`,
			[]Issue{is(body+"/sku", IssueRequired, `missing required property "sku"`)}},
		{"required names with ~ and / are escaped", `{"required":["a/b","m~n",""]}`, `{}`, []Issue{
			is(body+"/a~1b", IssueRequired, `missing required property "a/b"`),
			is(body+"/m~0n", IssueRequired, `missing required property "m~n"`),
			is(body+"/", IssueRequired, `missing required property ""`),
		}},
		{"required ignores non-objects", `{"required":["a"]}`, `[1]`, nil},
		{"nested properties and items", `{"properties":{"items":{"items":{"properties":{"sku":{"type":"string"}},"required":["qty"]}}}}`,
			`{"items":[{"sku":"a","qty":1},{"sku":7}]}`, []Issue{
				is(body+"/items/1/qty", IssueRequired, `missing required property "qty"`),
				is(body+"/items/1/sku", IssueType, "expected string, found number"),
			}},
		{"failing values under names with ~ and /", `{"properties":{"a/b":{"properties":{"~":{"type":"string"}}}}}`, `{"a/b":{"~":1}}`,
			[]Issue{is(body+"/a~1b/~0", IssueType, "expected string, found number")}},
		{"enum matches numbers by value", `{"enum":[1,"a"]}`, `1.0`, nil},
		{"enum with 1.0 matches 1", `{"enum":[1.0]}`, `1`, nil},
		{"enum miss", `{"enum":["a","b",3]}`, `"c"`, []Issue{is(body, IssueEnum, `expected one of ["a","b",3], found "c"`)}},
		{"enum false is not 0", `{"enum":[false]}`, `0`, []Issue{is(body, IssueEnum, "expected one of [false], found 0")}},
		{"enum object members in any order", `{"enum":[{"b":[1,{"c":null}],"a":2.0}]}`, `{"a":2,"b":[1e0,{"c":null}]}`, nil},
		{"enum arrays in order", `{"enum":[[1,2]]}`, `[2,1]`, []Issue{is(body, IssueEnum, "expected one of [[1,2]], found [2,1]")}},
		{"enum with many strings", `{"enum":["a","b","c","d","e","f","g","h","i","j",1]}`, `"j"`, nil},
		{"enum with many strings, miss", `{"items":{"enum":["a","b","c","d","e","f","g","h","i","j"]}}`, `["k",1]`, []Issue{
			is(body+"/0", IssueEnum, `expected one of ["a","b","c","d","e","f","g","h","i","j"], found "k"`),
			is(body+"/1", IssueEnum, `expected one of ["a","b","c","d","e","f","g","h","i","j"], found 1`),
		}},
		{"empty enum rejects everything", `{"enum":[]}`, `null`, []Issue{is(body, IssueEnum, "expected one of [], found null")}},
		{"const -2.0 matches -2", `{"const":-2.0}`, `-2`, nil},
		{"const big integers exactly", `{"const":9007199254740993}`, `9007199254740992`,
			[]Issue{is(body, IssueConst, "expected 9007199254740993, found 9007199254740992")}},
		{"const object", `{"const":{"a":true}}`, `{"a":1}`, []Issue{is(body, IssueConst, `expected {"a":true}, found {"a":1}`)}},
		{"minimum is inclusive: 0.1 vs 0.1", `{"minimum":0.1}`, `0.1`, nil},
		{"minimum exact on fractions", `{"minimum":0.1}`, `0.09999999999999999999`,
			[]Issue{is(body, IssueMinimum, "expected at least 0.1, found 0.09999999999999999999")}},
		{"maximum 1e399 vs 1e400", `{"maximum":1e399}`, `1e400`, []Issue{is(body, IssueMaximum, "expected at most 1e399, found 1e400")}},
		{"maximum past float precision", `{"maximum":9007199254740992}`, `9007199254740993`,
			[]Issue{is(body, IssueMaximum, "expected at most 9007199254740992, found 9007199254740993")}},
		{"maximum 10 vs 12", `{"maximum":10}`, `12`, []Issue{is(body, IssueMaximum, "expected at most 10, found 12")}},
		{"minimum and maximum ignore non-numbers", `{"minimum":5,"maximum":1}`, `"3"`, nil},
		// A bound of the other sign, or zero, is met by the value's sign.
		{"minimum 0, -0", `{"minimum":0}`, `-0.0`, nil},
		{"minimum 0, tiny negative", `{"minimum":0}`, `-1e-400`, []Issue{is(body, IssueMinimum, "expected at least 0, found -1e-400")}},
		{"minimum -0, 0", `{"minimum":-0}`, `0`, nil},
		{"minimum -2, -3", `{"minimum":-2}`, `-3`, []Issue{is(body, IssueMinimum, "expected at least -2, found -3")}},
		{"minimum -2, 1e400", `{"minimum":-2}`, `1e400`, nil},
		{"maximum 0, -0", `{"maximum":0}`, `-0`, nil},
		{"maximum 0, tiny positive", `{"maximum":0}`, `1e-400`, []Issue{is(body, IssueMaximum, "expected at most 0, found 1e-400")}},
		{"maximum -0, 0", `{"maximum":-0.0}`, `0`, nil},
		{"maximum 2, -1e400", `{"maximum":2}`, `-1e400`, nil},
		{"maximum -1, -0.5", `{"maximum":-1}`, `-0.5`, []Issue{is(body, IssueMaximum, "expected at most -1, found -0.5")}},
		{"minLength counts code points, not bytes", `{"minLength":2}`, `"💩"`,
			[]Issue{is(body, IssueMinLength, "expected at least 2 characters, found 1")}},
		{"maxLength counts code points, not bytes", `{"maxLength":1}`, `"💩"`, nil},
		{"maxLength with multi-byte text", `{"maxLength":2.0}`, `"ééé"`, []Issue{is(body, IssueMaxLength, "expected at most 2.0 characters, found 3")}},
		{"huge maxLength", `{"maxLength":1e400}`, `"abc"`, nil},
		{"maxLength 2 written with 800 zeros", `{"maxLength":2` + strings.Repeat("0", 800) + `e-800}`, `"ab"`, nil},
		{"pattern", `{"pattern":"^a"}`, `"bcd"`, []Issue{is(body, IssuePattern, `expected a value matching pattern "^a", found "bcd"`)}},
		{"pattern is unanchored", `{"pattern":"a+"}`, `"xxaayy"`, nil},
		{"pattern ignores non-strings", `{"pattern":"^a"}`, `[1,{"b":"c"}]`, nil},
		{"long data is clipped in messages", `{"pattern":"^a"}`, `"` + long + `"`,
			[]Issue{is(body, IssuePattern, `expected a value matching pattern "^a", found "`+long[:64]+`…"`)}},
		{"additionalProperties false points at the member", `{"properties":{"a":{}},"additionalProperties":false}`, `{"a":1,"x":2,"y/z":3}`, []Issue{
			is(body+"/x", IssueAdditionalProperties, `property "x" is not allowed`),
			is(body+"/y~1z", IssueAdditionalProperties, `property "y/z" is not allowed`),
		}},
		{"additionalProperties schema", `{"properties":{"a":{}},"additionalProperties":{"type":"boolean"}}`, `{"a":1,"b":true,"c":"no"}`,
			[]Issue{is(body+"/c", IssueType, "expected boolean, found string")}},
		{"additionalProperties true", `{"additionalProperties":true}`, `{"a":1}`, nil},
		{"false property schema", `{"properties":{"foo":true,"bar":false}}`, `{"foo":1,"bar":2}`,
			[]Issue{is(body+"/bar", IssueFalseSchema, "expected no value here (the schema is false), found number")}},
		{"false property schema, property absent", `{"properties":{"bar":false}}`, `{}`, nil},
		{"false items schema", `{"items":false}`, `[1,"a"]`, []Issue{
			is(body+"/0", IssueFalseSchema, "expected no value here (the schema is false), found number"),
			is(body+"/1", IssueFalseSchema, "expected no value here (the schema is false), found string"),
		}},
		{"false items schema, empty array", `{"items":false}`, `[]`, nil},
		{"keyword order for an object, members in instance order",
			`{"additionalProperties":false,"const":{},"enum":[{}],"properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["c"],"type":"array"}`,
			`{"z":1,"b":"x","a":5}`, []Issue{
				is(body, IssueType, "expected array, found object"),
				is(body+"/c", IssueRequired, `missing required property "c"`),
				is(body+"/z", IssueAdditionalProperties, `property "z" is not allowed`),
				is(body+"/b", IssueType, "expected integer, found string"),
				is(body+"/a", IssueType, "expected string, found number"),
				is(body, IssueEnum, `expected one of [{}], found {"z":1,"b":"x","a":5}`),
				is(body, IssueConst, `expected {}, found {"z":1,"b":"x","a":5}`),
			}},
		{"keyword order for a string", `{"pattern":"^z","maxLength":2,"minLength":5,"const":"y","enum":["x"],"type":"integer"}`, `"abc"`, []Issue{
			is(body, IssueType, "expected integer, found string"),
			is(body, IssueEnum, `expected one of ["x"], found "abc"`),
			is(body, IssueConst, `expected "y", found "abc"`),
			is(body, IssueMinLength, "expected at least 5 characters, found 3"),
			is(body, IssueMaxLength, "expected at most 2 characters, found 3"),
			is(body, IssuePattern, `expected a value matching pattern "^z", found "abc"`),
		}},
		{"keyword order for a number", `{"maximum":0,"minimum":10,"const":2,"enum":[1],"type":"string"}`, `5`, []Issue{
			is(body, IssueType, "expected string, found number"),
			is(body, IssueEnum, "expected one of [1], found 5"),
			is(body, IssueConst, "expected 2, found 5"),
			is(body, IssueMinimum, "expected at least 10, found 5"),
			is(body, IssueMaximum, "expected at most 0, found 5"),
		}},
		{"many properties use the sorted lookup", manyPropsSchema(40), manyPropsInstance(40, 7), []Issue{
			is(body+"/p7", IssueType, "expected string, found number"),
		}},
		{"many required names, all but one missing", manyPropsSchema(40), `{"p3":"x"}`, manyMissing(40, 3)},
		{"a long enum is clipped", `{"enum":["` + long + `"]}`, `1`,
			[]Issue{is(body, IssueEnum, `expected one of ["`+long[:62]+`…, found 1`)}},
		{"long values are clipped inside arrays and objects", `{"const":[1]}`, `[{"k":"` + long + `"},2]`,
			[]Issue{is(body, IssueConst, `expected [1], found [{"k":"`+long[:57]+`…`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := validateTest(t, tt.schema, tt.instance, 100)
			if diff := cmp.Diff(tt.want, got.issues); diff != "" {
				t.Errorf("issues mismatch (-want +got):\n%s", diff)
			}
			if got.truncated {
				t.Errorf("truncated = true, want false")
			}
		})
	}
}

func TestSchemaValidateTruncates(t *testing.T) {
	got := validateTest(t, `{"items":{"type":"string"}}`, `[1,2,3,4,5]`, 3)
	want := []Issue{
		{Path: "/request/body/0", Code: IssueType, Message: "expected string, found number"},
		{Path: "/request/body/1", Code: IssueType, Message: "expected string, found number"},
		{Path: "/request/body/2", Code: IssueType, Message: "expected string, found number"},
	}
	if diff := cmp.Diff(want, got.issues); diff != "" {
		t.Errorf("issues mismatch (-want +got):\n%s", diff)
	}
	if !got.truncated {
		t.Errorf("truncated = false, want true")
	}

	exact := validateTest(t, `{"items":{"type":"string"}}`, `[1,2,3]`, 3)
	if len(exact.issues) != 3 || exact.truncated {
		t.Errorf("exactly max failures: %d issues, truncated %v; want 3, false", len(exact.issues), exact.truncated)
	}
}

// TestSchemaValidateRequiredFirstUnderCap: an object's missing required
// names are listed before its members' failures, also when the cap cuts
// the list, and after failures recorded earlier in the walk.
func TestSchemaValidateRequiredFirstUnderCap(t *testing.T) {
	const schema = `{"items":{"required":["a","b"],"properties":{"a":true,"b":true},"additionalProperties":false}}`
	const body = "/request/body"
	req := func(i int, name string) Issue {
		return Issue{Path: body + "/" + strconv.Itoa(i) + "/" + name, Code: IssueRequired, Message: "missing required property \"" + name + "\""}
	}
	extra := func(i int, name string) Issue {
		return Issue{Path: body + "/" + strconv.Itoa(i) + "/" + name, Code: IssueAdditionalProperties, Message: "property \"" + name + "\" is not allowed"}
	}
	tests := []struct {
		name      string
		instance  string
		max       int
		want      []Issue
		truncated bool
	}{
		{"members fill the list", `[{"x":1,"y":2,"z":3}]`, 3, []Issue{req(0, "a"), req(0, "b"), extra(0, "x")}, true},
		{"required alone fills it", `[{"x":1}]`, 1, []Issue{req(0, "a")}, true},
		{"required fits exactly", `[{}]`, 2, []Issue{req(0, "a"), req(0, "b")}, false},
		{"after an earlier item", `[{"a":1,"b":2,"x":3},{"y":1}]`, 3, []Issue{extra(0, "x"), req(1, "a"), req(1, "b")}, true},
		{"no cap", `[{"b":1,"x":2,"y":3}]`, 0, []Issue{req(0, "a"), extra(0, "x"), extra(0, "y")}, false},
		{"list full before the object", `[{"a":1,"b":2,"x":3},{"y":1}]`, 1, []Issue{extra(0, "x")}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := validateTest(t, schema, tt.instance, tt.max)
			if diff := cmp.Diff(tt.want, got.issues); diff != "" {
				t.Errorf("issues mismatch (-want +got):\n%s", diff)
			}
			if got.truncated != tt.truncated {
				t.Errorf("truncated = %v, want %v", got.truncated, tt.truncated)
			}
		})
	}
}

func TestIssueListAdd(t *testing.T) {
	l := issueList{max: 1}
	l.add(Issue{Path: "/a", Code: IssueRequired, Message: "m"})
	l.add(Issue{Path: "/b", Code: IssueRequired, Message: "m"})
	if len(l.issues) != 1 || !l.truncated {
		t.Errorf("got %d issues, truncated %v; want 1, true", len(l.issues), l.truncated)
	}
}

// TestSchemaValidateDeep checks pointers deeper than the walk's preallocated
// token buffer.
func TestSchemaValidateDeep(t *testing.T) {
	const depth = 40
	schemaSrc := strings.Repeat(`{"items":`, depth) + `{"type":"string"}` + strings.Repeat(`}`, depth)
	inst := strings.Repeat(`[`, depth) + `1` + strings.Repeat(`]`, depth)
	got := validateTest(t, schemaSrc, inst, 100)
	want := []Issue{{Path: "/request/body" + strings.Repeat("/0", depth), Code: IssueType, Message: "expected string, found number"}}
	if diff := cmp.Diff(want, got.issues); diff != "" {
		t.Errorf("issues mismatch (-want +got):\n%s", diff)
	}
}

// manyPropsSchema is an object schema with n string properties p0..p(n-1),
// all required.
func manyPropsSchema(n int) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"p` + strconv.Itoa(i) + `":{"type":"string","maxLength":32}`)
	}
	b.WriteString(`},"required":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"p` + strconv.Itoa(i) + `"`)
	}
	b.WriteString(`],"additionalProperties":false}`)
	return b.String()
}

// manyPropsInstance is an instance of manyPropsSchema(n), in reverse member
// order, whose property bad (if in range) holds a number.
func manyPropsInstance(n, bad int) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := n - 1; i >= 0; i-- {
		b.WriteString(`"p` + strconv.Itoa(i) + `":`)
		if i == bad {
			b.WriteString("1")
		} else {
			b.WriteString(`"value"`)
		}
		if i > 0 {
			b.WriteByte(',')
		}
	}
	b.WriteByte('}')
	return b.String()
}

func manyMissing(n, present int) []Issue {
	var out []Issue
	for i := range n {
		if i != present {
			name := "p" + strconv.Itoa(i)
			out = append(out, Issue{Path: "/request/body/" + name, Code: IssueRequired, Message: `missing required property "` + name + `"`})
		}
	}
	return out
}

// benchObject is a ~40-property object schema mixing every scalar keyword,
// with a valid instance.
func benchObject() (schemaSrc, instance string) {
	var s, in strings.Builder
	s.WriteString(`{"type":"object","additionalProperties":false,"properties":{`)
	in.WriteByte('{')
	var required []string
	for i := range 40 {
		if i > 0 {
			s.WriteByte(',')
			in.WriteByte(',')
		}
		name := `"field_` + strconv.Itoa(i) + `"`
		s.WriteString(name + ":")
		in.WriteString(name + ":")
		switch i % 5 {
		case 0:
			s.WriteString(`{"type":"string","minLength":1,"maxLength":64}`)
			in.WriteString(`"some text value"`)
		case 1:
			s.WriteString(`{"type":"integer","minimum":0,"maximum":1000000}`)
			in.WriteString(`4242`)
		case 2:
			s.WriteString(`{"type":"number","minimum":0.01,"maximum":99999.99}`)
			in.WriteString(`19.99`)
		case 3:
			s.WriteString(`{"enum":["red","green","blue"]}`)
			in.WriteString(`"green"`)
		case 4:
			s.WriteString(`{"type":["boolean","null"]}`)
			in.WriteString(`true`)
		}
		if i%2 == 0 {
			required = append(required, name)
		}
	}
	s.WriteString(`},"required":[` + strings.Join(required, ",") + `]}`)
	in.WriteByte('}')
	return s.String(), in.String()
}

// benchArray is a schema for an array of line items, with a valid
// 200-item instance.
func benchArray() (schemaSrc, instance string) {
	schemaSrc = `{"type":"array","items":{"type":"object","required":["sku","qty"],"additionalProperties":false,
		"properties":{"sku":{"type":"string","pattern":"^[A-Z]{3}-[0-9]{4}$"},"qty":{"type":"integer","minimum":1,"maximum":1000},
		"price":{"type":"number","minimum":0},"note":{"type":"string","maxLength":200}}}}`
	var in strings.Builder
	in.WriteByte('[')
	for i := range 200 {
		if i > 0 {
			in.WriteByte(',')
		}
		in.WriteString(`{"sku":"ABC-` + strconv.Itoa(1000+i) + `","qty":` + strconv.Itoa(1+i%50) + `,"price":12.5,"note":"gift wrap"}`)
	}
	in.WriteByte(']')
	return schemaSrc, in.String()
}

// BenchmarkCompileValidate measures compiling a schema and validating a
// valid instance with it, as Check does on every call (the trees are parsed
// beforehand). "parse+" adds strictjson.Parse of both documents;
// "encoding-json-unmarshal" decodes the same bytes into any, for scale.
func BenchmarkCompileValidate(b *testing.B) {
	for _, bc := range []struct {
		name string
		gen  func() (string, string)
	}{{"object40", benchObject}, {"array200", benchArray}} {
		schemaSrc, inst := bc.gen()
		sv, iv := parseTest(b, schemaSrc), parseTest(b, inst)
		if got := validateTest(b, schemaSrc, inst, 100); len(got.issues) != 0 {
			b.Fatalf("benchmark instance is invalid: %v", got.issues)
		}
		b.Run(bc.name+"/compile", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := compileSchema(sv, "/schema"); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bc.name+"/validate", func(b *testing.B) {
			s, _ := compileSchema(sv, "/schema")
			b.ReportAllocs()
			for b.Loop() {
				errs := issueList{max: 100}
				s.validate(iv, "/request/body", &errs)
			}
		})
		b.Run(bc.name+"/compile+validate", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s, _ := compileSchema(sv, "/schema")
				errs := issueList{max: 100}
				s.validate(iv, "/request/body", &errs)
			}
		})
		b.Run(bc.name+"/parse", func(b *testing.B) {
			sb, ib := []byte(schemaSrc), []byte(inst)
			b.SetBytes(int64(len(sb) + len(ib)))
			b.ReportAllocs()
			for b.Loop() {
				_, _ = strictjson.Parse(sb, strictjson.Limits{})
				_, _ = strictjson.Parse(ib, strictjson.Limits{})
			}
		})
		b.Run(bc.name+"/parse+compile+validate", func(b *testing.B) {
			sb, ib := []byte(schemaSrc), []byte(inst)
			b.SetBytes(int64(len(sb) + len(ib)))
			b.ReportAllocs()
			for b.Loop() {
				sv, _ := strictjson.Parse(sb, strictjson.Limits{})
				iv, _ := strictjson.Parse(ib, strictjson.Limits{})
				s, _ := compileSchema(sv, "/schema")
				errs := issueList{max: 100}
				s.validate(iv, "/request/body", &errs)
			}
		})
		b.Run(bc.name+"/encoding-json-unmarshal", func(b *testing.B) {
			sb, ib := []byte(schemaSrc), []byte(inst)
			b.SetBytes(int64(len(sb) + len(ib)))
			b.ReportAllocs()
			for b.Loop() {
				var s, i any
				_ = json.Unmarshal(sb, &s)
				_ = json.Unmarshal(ib, &i)
			}
		})
	}
}

// TestSchemaValidateAllocatesNothingOnSuccess guards the promise that a
// passing instance costs no allocation.
func TestSchemaValidateAllocatesNothingOnSuccess(t *testing.T) {
	if raceEnabled() {
		t.Skip("the race detector's instrumentation allocates; run without -race")
	}
	for _, gen := range []func() (string, string){benchObject, benchArray} {
		schemaSrc, inst := gen()
		s, err := compileSchema(parseTest(t, schemaSrc), "/schema")
		if err != nil {
			t.Fatal(err)
		}
		iv := parseTest(t, inst)
		allocs := testing.AllocsPerRun(20, func() {
			errs := issueList{max: 100}
			s.validate(iv, "/request/body", &errs)
			if len(errs.issues) != 0 {
				t.Fatalf("instance is invalid: %v", errs.issues)
			}
		})
		if allocs != 0 {
			t.Errorf("validate allocates %v times per run on a valid instance, want 0", allocs)
		}
	}
}

// raceEnabled reports whether the test binary was built with -race.
func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// FuzzCompileValidate feeds arbitrary schema and instance documents through
// compileSchema and validate: neither may panic, a failed compile must list
// details with the code that names the most specific problem, and every
// recorded pointer must start at the instance's base.
func FuzzCompileValidate(f *testing.F) {
	f.Add(`{"type":"object","properties":{"a/b":{"enum":[1,"x"]}},"required":["c"]}`, `{"a/b":1.0,"z":[]}`)
	f.Add(`{"items":{"pattern":"^a+$","maxLength":2},"additionalProperties":false}`, `["aaa","💩"]`)
	f.Add(`{"const":{"a":[1e400]},"minimum":-0.0}`, `{"a":[10e399]}`)
	f.Add(`{"format":"x","pattern":"(?=a)","type":"strnig"}`, `null`)
	f.Add(`{"properties":{"x":false},"items":true}`, `{"x":0}`)
	f.Fuzz(func(t *testing.T, schemaSrc, inst string) {
		sv, err := strictjson.Parse([]byte(schemaSrc), strictjson.Limits{MaxDepth: 64})
		if err != nil {
			return
		}
		iv, err := strictjson.Parse([]byte(inst), strictjson.Limits{MaxDepth: 64})
		if err != nil {
			return
		}
		s, serr := compileSchema(sv, "/schema")
		if serr != nil {
			if len(serr.Details) == 0 {
				t.Fatalf("compile error without details: %v", serr)
			}
			for _, d := range serr.Details {
				if !strings.HasPrefix(d.Path, "/schema") || d.Message == "" {
					t.Fatalf("bad detail %+v", d)
				}
			}
			return
		}
		errs := issueList{max: 100}
		s.validate(iv, "/request/body", &errs)
		for _, is := range errs.issues {
			if !strings.HasPrefix(is.Path, "/request/body") || is.Code == "" || is.Message == "" {
				t.Fatalf("bad issue %+v", is)
			}
		}
	})
}

// TestSchemaRequiredWithAndWithoutProperties: required names matched
// through their property entries and names with no property entry are
// both checked.
func TestSchemaRequiredWithAndWithoutProperties(t *testing.T) {
	const body = "/request/body"
	missing := func(name string) Issue {
		return Issue{Path: body + "/" + name, Code: IssueRequired, Message: `missing required property "` + name + `"`}
	}
	props := `"properties":{"a":{"type":"string"},"b":{},"c":{},"d":{},"e":{},"f":{},"g":{},"h":{},"i":{}}`
	tests := []struct {
		name, schema, instance string
		want                   []Issue
	}{
		{"property and plain name, both present", `{"required":["a","x"],"properties":{"a":{}}}`, `{"x":1,"a":2}`, nil},
		{"plain name missing", `{"required":["a","x"],"properties":{"a":{}}}`, `{"a":2}`, []Issue{missing("x")}},
		{"property name missing", `{"required":["a","x"],"properties":{"a":{}}}`, `{"x":2}`, []Issue{missing("a")}},
		{"no properties keyword", `{"required":["a","b"]}`, `{"b":1}`, []Issue{missing("a")}},
		{"sorted lookup", `{"required":["i","a","z"],` + props + `}`, `{"a":"s","i":1}`, []Issue{missing("z")}},
		{"sorted lookup, property missing", `{"required":["i","a","z"],` + props + `}`, `{"z":1,"a":"s"}`, []Issue{missing("i")}},
		{"required before properties in the schema", `{"required":["a"],"properties":{"a":{"type":"string"}}}`, `{"a":1}`,
			[]Issue{{Path: body + "/a", Code: IssueType, Message: "expected string, found number"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := validateTest(t, tt.schema, tt.instance, 100)
			if diff := cmp.Diff(tt.want, got.issues); diff != "" {
				t.Errorf("issues mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// notRegular ends the message of a refused lookaround or back-reference.
const notRegular = pattern.NotRegular
