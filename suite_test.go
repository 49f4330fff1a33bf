package preflight

// Conformance against the official JSON-Schema-Test-Suite: the groups of
// draft 2020-12 that use only the supported keywords (see
// testdata/jsonschema-suite/README.md for the upstream commit and how they
// were selected). Every case runs twice: through the public path
// (DecodeCheckRequest, then Check) and directly through compileSchema/validate.

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentpreflight/preflight/strictjson"
)

// suiteFiles are the suite files under testdata/jsonschema-suite.
var suiteFiles = []string{"draft2020-12.json", "boolean-schemas.json"}

// suiteCase is one test of the suite, ready to run: schema and data keep the
// suite's exact bytes, so numbers keep their spelling (1.0, -0.0, 9007199254740992.0).
type suiteCase struct {
	name   string // group file/group description/test description
	schema []byte
	data   []byte
	valid  bool
}

// loadSuite reads one suite file.
//
// A top-level "$schema" is dropped (the selection has already removed the
// standard one; this keeps the rule if the files are refreshed).
//
// The boolean_schema.json groups have a top-level schema of true or false,
// which preflight rejects by design (DESIGN §2: the top-level schema must be
// an object). To still exercise boolean schemas through the public path,
// such a schema B is wrapped as {"properties":{"v":B}} and its data D sent as
// the body {"v":D}: the verdict is the same as that of B on D.
func loadSuite(t testing.TB, file string) []suiteCase {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "jsonschema-suite", file))
	if err != nil {
		t.Fatalf("read suite: %v", err)
	}
	var groups []struct {
		File        string          `json:"file"`
		Description string          `json:"description"`
		Schema      json.RawMessage `json:"schema"`
		Tests       []struct {
			Description string          `json:"description"`
			Data        json.RawMessage `json:"data"`
			Valid       bool            `json:"valid"`
		} `json:"tests"`
	}
	if err := json.Unmarshal(raw, &groups); err != nil {
		t.Fatalf("decode %s: %v", file, err)
	}
	var cases []suiteCase
	for _, g := range groups {
		schema := dropTopLevelMember(t, g.Schema, "$schema")
		wrap := isBooleanJSON(schema)
		if wrap {
			schema = []byte(`{"properties":{"v":` + string(schema) + `}}`)
		}
		for _, tc := range g.Tests {
			data := []byte(tc.Data)
			if wrap {
				data = []byte(`{"v":` + string(data) + `}`)
			}
			cases = append(cases, suiteCase{
				name:   g.File + "/" + g.Description + "/" + tc.Description,
				schema: schema,
				data:   data,
				valid:  tc.Valid,
			})
		}
	}
	if len(cases) == 0 {
		t.Fatalf("%s holds no cases", file)
	}
	return cases
}

func isBooleanJSON(b []byte) bool {
	b = bytes.TrimSpace(b)
	return bytes.Equal(b, []byte("true")) || bytes.Equal(b, []byte("false"))
}

// dropTopLevelMember removes the member name from the JSON object text src,
// copying every other member's bytes unchanged.
func dropTopLevelMember(t testing.TB, src []byte, name string) []byte {
	t.Helper()
	v, err := strictjson.Parse(src, strictjson.Limits{})
	if err != nil {
		t.Fatalf("parse schema %s: %v", src, err)
	}
	if v.Kind() != strictjson.Object {
		return src
	}
	if _, ok := v.Get(name); !ok {
		return src
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for it := v.Iter(); it.Next(); {
		m := it.Member()
		if m.Key == name {
			continue
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(m.Key)
		b.Write(key)
		b.WriteByte(':')
		b.Write(src[m.Value.Start():m.Value.End()])
	}
	b.WriteByte('}')
	return b.Bytes()
}

// checkRequestBytes builds the body of POST /check-request for a suite case.
func checkRequestBytes(c suiteCase) []byte {
	return []byte(`{"request":{"method":"POST","url":"https://api.example.com/x","body":` +
		string(c.data) + `},"schema":` + string(c.schema) + `}`)
}

// TestSuiteCheck runs every suite case through the public path and requires
// Check's verdict to equal the suite's.
func TestSuiteCheck(t *testing.T) {
	for _, file := range suiteFiles {
		t.Run(file, func(t *testing.T) {
			cases := loadSuite(t, file)
			pass := 0
			for _, c := range cases {
				ok := t.Run(c.name, func(t *testing.T) {
					req, err := DecodeCheckRequest(checkRequestBytes(c))
					if err != nil {
						t.Fatalf("DecodeCheckRequest: %v", err)
					}
					res, err := Check(req)
					if err != nil {
						t.Fatalf("Check: %v", err)
					}
					if res.Valid != c.valid {
						t.Errorf("Valid = %v, want %v (errors %v)", res.Valid, c.valid, res.Errors)
					}
				})
				if ok {
					pass++
				}
			}
			t.Logf("%s: %d/%d cases agree with the suite", file, pass, len(cases))
		})
	}
}

// TestSuiteSchema runs every suite case directly through compileSchema and
// validate.
func TestSuiteSchema(t *testing.T) {
	for _, file := range suiteFiles {
		t.Run(file, func(t *testing.T) {
			cases := loadSuite(t, file)
			pass := 0
			for _, c := range cases {
				ok := t.Run(c.name, func(t *testing.T) {
					sv := parseTest(t, string(c.schema))
					s, serr := compileSchema(sv, "/schema")
					if serr != nil {
						t.Fatalf("compileSchema: %v %v", serr, serr.Details)
					}
					var errs issueList
					s.validate(parseTest(t, string(c.data)), "/request/body", &errs)
					if got := len(errs.issues) == 0; got != c.valid {
						t.Errorf("valid = %v, want %v (issues %v)", got, c.valid, errs.issues)
					}
				})
				if ok {
					pass++
				}
			}
			t.Logf("%s: %d/%d cases agree with the suite", file, pass, len(cases))
		})
	}
}

// TestSuiteBooleanTopLevelRejected records the one place where preflight
// deliberately departs from the suite: a top-level boolean schema is
// invalid_schema (DESIGN §2), so the boolean_schema.json groups run wrapped.
func TestSuiteBooleanTopLevelRejected(t *testing.T) {
	for _, src := range []string{`true`, `false`} {
		_, err := DecodeCheckRequest([]byte(`{"request":{"method":"POST","url":"https://api.example.com/x","body":1},"schema":` + src + `}`))
		if err == nil {
			t.Errorf("schema %s: DecodeCheckRequest succeeded, want invalid_schema", src)
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Code != ErrorInvalidSchema {
			t.Errorf("schema %s: error %v, want code %s", src, err, ErrorInvalidSchema)
		}
	}
}
