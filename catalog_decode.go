package preflight

import (
	"encoding/json"
	"strconv"

	"github.com/agentpreflight/preflight/internal/jsonv"
)

var (
	catalogTopMembers   = []string{"$schema", "builtins", "operations"}
	operationMembers    = []string{"provider", "name", "aliases", "schema", "effects", "annotations"}
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
//	  "annotations": {"readOnlyHint": false, "destructiveHint": false}
//	}]}
//
// "effects" is "read_only", "side_effecting" or "destructive" (see
// [Effects]); absent means from the annotations. "annotations" takes the
// MCP hint names and an ignored "title". The catalog holds the built-in
// operations (see [DefaultCatalog]) followed by the file's, unless the file
// says "builtins": false; a file operation that repeats a built-in name is
// a duplicate. A top-level "$schema" string (for editors) is ignored. Decoding is strict: malformed JSON and duplicate
// member names (invalid_json), then unknown members and ill-typed values
// (invalid_request, all at once), then everything [NewCatalog] rejects
// (with its codes) are reported in an *Error whose details carry JSON
// Pointers into the file, such as "/operations/1/schema/format".
func DecodeCatalog(data []byte) (*Catalog, error) {
	root, data, perr := parseObject(data, jsonv.Limits{MaxDepth: maxCatalogFileDepth})
	if perr != nil {
		return nil, perr
	}
	var d decoder
	d.object(root, "", catalogTopMembers, nil)
	if v := d.member(root, "", "$schema", false); v.IsValid() {
		d.str(v, memberPath{"", "$schema"}, 0)
	}
	builtins := true
	if v := d.member(root, "", "builtins", false); v.IsValid() {
		builtins = d.boolean(v, memberPath{"", "builtins"})
	}
	var ops []Operation
	if builtins {
		ops = append(ops, builtinOperations...)
	}
	n := len(ops)
	if v := d.member(root, "", "operations", true); v.IsValid() {
		if v.Kind() != jsonv.Array {
			d.add("/operations", IssueType, "expected an array of operations, found "+kindName(v))
		} else {
			for it := v.Iter(); it.Next(); {
				ops = append(ops, d.operation(it.Value(), "/operations/"+strconv.Itoa(it.Index()), data))
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

func (d *decoder) operation(v jsonv.Value, path string, data []byte) Operation {
	var op Operation
	if !d.object(v, path, operationMembers, nil) {
		return op
	}
	if m := d.member(v, path, "provider", true); m.IsValid() {
		op.Provider, _ = d.str(m, memberPath{path, "provider"}, 1)
	}
	if m := d.member(v, path, "name", true); m.IsValid() {
		op.Name, _ = d.str(m, memberPath{path, "name"}, 1)
	}
	if m := d.member(v, path, "aliases", false); m.IsValid() {
		if m.Kind() != jsonv.Array {
			d.add(path+"/aliases", IssueType, "expected an array of operation names, found "+kindName(m))
		} else {
			for it := m.Iter(); it.Next(); {
				s, _ := d.str(it.Value(), memberPath{path + "/aliases", strconv.Itoa(it.Index())}, 1)
				op.Aliases = append(op.Aliases, s)
			}
		}
	}
	if m := d.member(v, path, "schema", false); m.IsValid() {
		// Any JSON value: NewCatalog says what is wrong with a non-object.
		op.Schema = json.RawMessage(data[m.Start():m.End()])
	}
	if m := d.member(v, path, "effects", false); m.IsValid() {
		if s, ok := d.str(m, memberPath{path, "effects"}, 0); ok {
			op.Effects = EffectsFromAnnotations
			for i, name := range effectsFileNames {
				if s == name {
					op.Effects = Effects(i + 1)
				}
			}
			if op.Effects == EffectsFromAnnotations {
				d.add(path+"/effects", IssueEnum, "expected one of "+quoteList(effectsFileNames)+", found "+strconv.Quote(clip(s)))
			}
		}
	}
	if m := d.member(v, path, "annotations", false); m.IsValid() && d.object(m, path+"/annotations", annotationsMembers, nil) {
		a := &ToolAnnotations{}
		hint := func(name string, dst **bool) {
			if h := d.member(m, path+"/annotations", name, false); h.IsValid() {
				b := d.boolean(h, memberPath{path + "/annotations", name})
				*dst = &b
			}
		}
		if t := d.member(m, path+"/annotations", "title", false); t.IsValid() {
			d.str(t, memberPath{path + "/annotations", "title"}, 0)
		}
		hint("readOnlyHint", &a.ReadOnlyHint)
		hint("destructiveHint", &a.DestructiveHint)
		hint("idempotentHint", &a.IdempotentHint)
		hint("openWorldHint", &a.OpenWorldHint)
		op.Annotations = a
	}
	return op
}
