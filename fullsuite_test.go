package preflight

// Conformance of the full validator (tool schemas) against the official
// JSON-Schema-Test-Suite for draft 2020-12 and draft-07, vendored under
// testdata/jsonschema-full (see its README for the commit). Every test
// case runs; the only ones not expected to pass are in fullSuiteSkips,
// each with its reason.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/strictjson"
)

// fullSuiteSkips lists the suite cases the full validator does not pass,
// by "dialect/file/group description" (a whole group) or
// "dialect/file/group description/test description" (one case), each
// with the reason.
var fullSuiteSkips = map[string]string{
	"draft2020-12/defs.json/validate definition against metaschema":                                               remoteMeta,
	"draft2020-12/ref.json/remote ref, containing refs itself":                                                    remoteMeta,
	"draft7/definitions.json/validate definition against metaschema":                                              remoteMeta,
	"draft7/ref.json/remote ref, containing refs itself":                                                          remoteMeta,
	"draft2020-12/dynamicRef.json/strict-tree schema, guards against misspelled properties":                       remoteDoc,
	"draft2020-12/dynamicRef.json/tests for implementation dynamic anchor and reference link":                     remoteDoc,
	"draft2020-12/dynamicRef.json/$ref and $dynamicAnchor are independent of order - $defs first":                 remoteDoc,
	"draft2020-12/dynamicRef.json/$ref and $dynamicAnchor are independent of order - $ref first":                  remoteDoc,
	"draft2020-12/dynamicRef.json/$ref to $dynamicRef finds detached $dynamicAnchor":                              remoteDoc,
	"draft2020-12/vocabulary.json/schema that uses custom metaschema with with no validation vocabulary":          customMeta,
	"draft2020-12/vocabulary.json/ignore unrecognized optional vocabulary":                                        customMeta,
	"draft2020-12/optional/cross-draft.json/refs to historic drafts are processed as historic drafts":             remoteMeta,
	"draft7/optional/cross-draft.json/refs to future drafts are processed as future drafts":                       remoteMeta,
	"draft2020-12/optional/format-assertion.json/schema that uses custom metaschema with format-assertion: false": customMeta,
	"draft2020-12/optional/format-assertion.json/schema that uses custom metaschema with format-assertion: true":  customMeta,
	"draft7/optional/content.json/validation of string-encoded content based on media type":                       contentAnnotation,
	"draft7/optional/content.json/validation of binary string-encoding":                                           contentAnnotation,
	"draft7/optional/content.json/validation of binary-encoded media type documents":                              contentAnnotation,
}

// The reasons of fullSuiteSkips: each case needs a document the validator
// refuses to fetch by design (a remote $ref is a compile error).
const (
	remoteMeta = "refers to the dialect's meta-schema by its URL: a remote $ref, refused by design (never fetched)"
	remoteDoc  = "refers to a document of the suite's remotes/ (http://localhost:1234/...): a remote $ref, refused by design"
	customMeta = "$schema names a custom meta-schema at http://localhost:1234/: unknown dialects are refused by design"
	// Not a refusal: contentEncoding and contentMediaType are annotations
	// (2020-12 makes them so; draft-07 allowed either), so the content of
	// a string is never decoded.
	contentAnnotation = "content keywords are annotations: draft-07 lets a validator assert them, this one does not"
)

type fullSuiteGroup struct {
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Tests       []struct {
		Description string          `json:"description"`
		Data        json.RawMessage `json:"data"`
		Valid       bool            `json:"valid"`
	} `json:"tests"`
}

// fullSuiteDialects are the vendored dialect folders, and the $schema
// each one's schemas are read in when they name none.
var fullSuiteDialects = []struct{ dir, schema string }{
	{"draft2020-12", ""},
	{"draft7", "http://json-schema.org/draft-07/schema#"},
}

func TestFullSuite(t *testing.T) {
	used := map[string]bool{}
	for _, dl := range fullSuiteDialects {
		for _, part := range fullSuiteParts {
			runFullSuitePart(t, dl.dir, dl.schema, part.dir, part.assertFormat, used)
		}
	}
	for k := range fullSuiteSkips {
		if !used[k] {
			t.Errorf("skip list entry matches no case: %s", k)
		}
	}
}

// fullSuiteParts are the folders of each dialect: the required tests,
// the optional ones (format as an annotation), and the optional format
// tests of the formats the validator asserts, run with format assertion.
var fullSuiteParts = []struct {
	dir          string
	assertFormat bool
}{{"", false}, {"optional", false}, {"optional/format", true}}

// runFullSuitePart runs the files of one folder of one dialect.
func runFullSuitePart(t *testing.T, dir, schemaURI, part string, assertFormat bool, used map[string]bool) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "jsonschema-full", dir, part, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no suite files for %s/%s: %v", dir, part, err)
	}
	sort.Strings(files)
	pass, skipped := 0, 0
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var groups []fullSuiteGroup
		if err := json.Unmarshal(raw, &groups); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, g := range groups {
			gname := strings.TrimSuffix(dir+"/"+part, "/") + "/" + filepath.Base(file) + "/" + g.Description
			schemaText := withDialect(g.Schema, schemaURI)
			for _, tc := range g.Tests {
				name := gname + "/" + tc.Description
				reason, skip := fullSuiteSkips[name]
				if !skip {
					reason, skip = fullSuiteSkips[gname]
					if skip {
						used[gname] = true
					}
				} else {
					used[name] = true
				}
				got, err := fullSuiteVerdict(schemaText, tc.Data, assertFormat)
				if skip {
					skipped++
					// Every skip but the content annotations is a
					// refusal by design: the schema must not compile,
					// and must say why. A content case is skipped
					// because its data is accepted.
					if reason == contentAnnotation {
						if err != nil || !got {
							t.Errorf("content-annotation case not accepted as valid: %s: %v", name, err)
						}
					} else if err == nil {
						t.Errorf("skipped case compiles now (%s): %s (valid = %v)", reason, name, got)
					} else if msg := err.Error(); !strings.Contains(msg, "outside this schema") && !strings.Contains(msg, "$schema") {
						t.Errorf("skipped case refused for another reason than %q: %s: %v", reason, name, err)
					}
					continue
				}
				if err != nil {
					t.Errorf("%s: %v", name, err)
					continue
				}
				if got != tc.Valid {
					t.Errorf("%s: valid = %v, want %v", name, got, tc.Valid)
					continue
				}
				pass++
			}
		}
	}
	t.Logf("%s: %d cases pass, %d skipped", strings.TrimSuffix(dir+"/"+part, "/"), pass, skipped)
}

// withDialect adds "$schema": uri to an object schema that names none.
func withDialect(schema json.RawMessage, uri string) []byte {
	s := strings.TrimSpace(string(schema))
	if uri == "" || !strings.HasPrefix(s, "{") || strings.Contains(s, `"$schema"`) {
		return []byte(s)
	}
	if strings.TrimSpace(s[1:]) == "}" {
		return []byte(`{"$schema":"` + uri + `"}`)
	}
	return []byte(`{"$schema":"` + uri + `",` + s[1:])
}

// fullSuiteVerdict compiles schema and validates data with the full
// validator, as a tool schema is.
func fullSuiteVerdict(schema, data []byte, assertFormat bool) (bool, error) {
	sv, err := strictjson.Parse(schema, strictjson.Limits{})
	if err != nil {
		return false, err
	}
	doc, serr := compileFullSchemaWith(sv, "", assertFormat)
	if serr != nil {
		return false, serr
	}
	dv, err := strictjson.Parse(data, strictjson.Limits{})
	if err != nil {
		return false, err
	}
	errs := issueList{max: maxCheckErrors}
	if lerr := doc.validate(dv, "", &errs); lerr != nil {
		return false, lerr
	}
	return len(errs.issues) == 0, nil
}
