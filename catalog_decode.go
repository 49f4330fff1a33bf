package preflight

import (
	"encoding/json"
	"strconv"

	"github.com/agentpreflight/preflight/internal/clip"
	"github.com/agentpreflight/preflight/strictjson"
)

var (
	catalogTopMembers   = []string{"$schema", "builtins", "operations"}
	operationMembers    = []string{"provider", "name", "aliases", "schema", "effects", "annotations", "assertFormat"}
	annotationsMembers  = []string{"title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}
	effectsFileNames    = effectsNames[1:]
	maxCatalogFileDepth = maxCheckDepth
)

// DecodeCatalog builds a catalog from a catalog file, a JSON document of
// this form (every member but provider and name optional):
//
//	{"operations": [{
//	  "provider": "github", "name": "create_issue", "aliases": ["issues.create"],
//	  "schema": {"type": "object", "required": ["title"], ...},
//	  "effects": "side_effecting",
//	  "annotations": {"readOnlyHint": false, "destructiveHint": false},
//	  "assertFormat": false
//	}]}
//
// "effects" is "read_only", "side_effecting" or "destructive" (see
// [Effects]); absent means from the annotations. "annotations" takes the
// MCP hint names and an ignored "title". "assertFormat": true makes the
// schema's format keywords assertions (see [Operation.AssertFormat]). The catalog holds the built-in
// operations (see [DefaultCatalog]) followed by the file's, unless the file
// says "builtins": false; a file operation that repeats a built-in name is
// a duplicate. A top-level "$schema" string (for editors) is ignored. Decoding is strict: malformed JSON and duplicate
// member names (invalid_json), then unknown members and ill-typed values
// (invalid_request, all at once), then everything [NewCatalog] rejects
// (with its codes) are reported in an *Error whose details carry JSON
// Pointers into the file, such as "/operations/1/schema/format".
func DecodeCatalog(data []byte) (*Catalog, error) {
	root, perr := parseObject(data, strictjson.Limits{MaxDepth: maxCatalogFileDepth}, strictjson.Parse)
	if perr != nil {
		return nil, perr
	}
	var d decoder
	var f [3]strictjson.Value // catalogTopMembers
	d.fields(root, "", catalogTopMembers, f[:])
	if v := f[0]; v.IsValid() {
		d.str(v, memberPath{"", "$schema"}, 0)
	}
	builtins := true
	if v := f[1]; v.IsValid() {
		builtins = d.boolean(v, memberPath{"", "builtins"})
	}
	var ops []Operation
	if builtins {
		ops = append(ops, builtinOperations...)
	}
	n := len(ops)
	if v := d.need(f[2], "", "operations"); v.IsValid() {
		if v.Kind() != strictjson.Array {
			d.add("/operations", IssueType, "expected an array of operations, found "+kindName(v))
		} else {
			for it := v.Iter(); it.Next(); {
				ops = append(ops, d.operation(it.Value(), "/operations/"+strconv.Itoa(it.Index())))
			}
		}
	}
	if e := d.err(); e != nil {
		return nil, e
	}
	c, cerr := newCatalog(ops, "/operations", n)
	if cerr != nil {
		return nil, cerr
	}
	return c, nil
}

func (d *decoder) operation(v strictjson.Value, path string) Operation {
	var op Operation
	var f [7]strictjson.Value // operationMembers
	if !d.fields(v, path, operationMembers, f[:]) {
		return op
	}
	if m := d.need(f[0], path, "provider"); m.IsValid() {
		op.Provider, _ = d.str(m, memberPath{path, "provider"}, 1)
	}
	if m := d.need(f[1], path, "name"); m.IsValid() {
		op.Name, _ = d.str(m, memberPath{path, "name"}, 1)
	}
	if m := f[2]; m.IsValid() {
		if m.Kind() != strictjson.Array {
			d.add(path+"/aliases", IssueType, "expected an array of operation names, found "+kindName(m))
		} else {
			for it := m.Iter(); it.Next(); {
				s, _ := d.str(it.Value(), memberPath{path + "/aliases", strconv.Itoa(it.Index())}, 1)
				op.Aliases = append(op.Aliases, s)
			}
		}
	}
	if m := f[3]; m.IsValid() {
		// Any JSON value: NewCatalog says what is wrong with a non-object.
		op.Schema = json.RawMessage(m.Raw())
	}
	if m := f[4]; m.IsValid() {
		if s, ok := d.str(m, memberPath{path, "effects"}, 0); ok {
			op.Effects = EffectsFromAnnotations
			for i, name := range effectsFileNames {
				if s == name {
					op.Effects = Effects(i + 1)
				}
			}
			if op.Effects == EffectsFromAnnotations {
				d.add(path+"/effects", IssueEnum, "expected one of "+quoteList(effectsFileNames)+", found "+strconv.Quote(clip.String(s)))
			}
		}
	}
	if m := f[5]; m.IsValid() {
		at := path + "/annotations"
		var h [5]strictjson.Value // annotationsMembers
		if d.fields(m, at, annotationsMembers, h[:]) {
			a := &ToolAnnotations{}
			hint := func(i int, dst **bool) {
				if h[i].IsValid() {
					b := d.boolean(h[i], memberPath{at, annotationsMembers[i]})
					*dst = &b
				}
			}
			if t := h[0]; t.IsValid() {
				d.str(t, memberPath{at, "title"}, 0)
			}
			hint(1, &a.ReadOnlyHint)
			hint(2, &a.DestructiveHint)
			hint(3, &a.IdempotentHint)
			hint(4, &a.OpenWorldHint)
			op.Annotations = a
		}
	}
	if m := f[6]; m.IsValid() {
		op.AssertFormat = d.boolean(m, memberPath{path, "assertFormat"})
	}
	return op
}
