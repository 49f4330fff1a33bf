package preflight

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/agentpreflight/preflight/internal/redecide"
	"github.com/agentpreflight/preflight/strictjson"
)

// Operation describes one tool a [Catalog] decides: who provides it, what
// its payload must look like and what running it does to the world. The
// rules of [Decide] are the same for every operation; only these facts
// differ.
type Operation struct {
	// Provider and Name identify the tool as ToolCall.Provider and
	// ToolCall.Operation name it, for example "github" and "create_issue".
	// Both are required.
	Provider string
	Name     string
	// Aliases are other operation names, of the same provider, decided as
	// this operation. A fingerprint covers the name as sent, so history
	// recorded under one name never matches a call made under another.
	Aliases []string
	// Schema is the JSON Schema the payload (ToolCall.Request) must satisfy,
	// at most 32,768 bytes, in the full vocabulary of JSON Schema 2020-12,
	// or of draft-07 (or 2019-09, draft-06) when its $schema names it, so
	// tool schemas from MCP servers, OpenAPI documents and LLM function
	// definitions can be used as they are. References ($ref, $dynamicRef)
	// are resolved within the schema only: one naming another document is
	// refused, never fetched. Annotation keywords (format included) and
	// unknown keywords are ignored. Check's schema, by contrast, is held to
	// the spec's twelve-keyword subset. Nil (or empty) means any JSON
	// object.
	Schema json.RawMessage
	// Effects says what a call does to the world. Zero means: read it from
	// Annotations. An explicit value wins over the annotations.
	Effects Effects
	// Annotations are the tool's MCP annotations, as its author published
	// them. They are the author's claims; preflight does not verify them.
	// Nil means the tool published none.
	Annotations *ToolAnnotations

	// URLMembers names top-level payload members that, when present as
	// strings, must hold an absolute http(s) URL with a host (and a port,
	// if any, of 0 to 65535): a rule no schema keyword states. A payload
	// that breaks it draws an absolute_url issue at the member and a block,
	// like a schema failure. The built-in browse operation has "url"; nil
	// means none. Catalog files cannot state it.
	URLMembers []string
	// AssertFormat makes "format" in Schema an assertion, for these
	// formats: date-time, date, time, duration, email, hostname, ipv4,
	// ipv6, uri, uri-reference, uuid and regex (as JSON Schema 2020-12's
	// format-assertion vocabulary defines them). A string that is not
	// of its format then draws a format issue and a block; other formats,
	// and values that are not strings, stay unchecked. False (the
	// default) keeps every format an annotation. Catalog files state it
	// as "assertFormat": true.
	AssertFormat bool
}

// ToolAnnotations are the behaviour hints of an MCP tool description
// (the "annotations" member of a tool in tools/list). A nil field was not
// given. The JSON names are MCP's, so the annotations of a tool can be
// unmarshaled into this type directly.
type ToolAnnotations struct {
	// ReadOnlyHint: the tool does not change its environment.
	ReadOnlyHint *bool `json:"readOnlyHint,omitempty"`
	// DestructiveHint: the tool may destroy or overwrite (MCP's default
	// is true for a tool that is not read-only).
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	// IdempotentHint: repeating a call with the same arguments has no
	// further effect. Listed, not used by the rules.
	IdempotentHint *bool `json:"idempotentHint,omitempty"`
	// OpenWorldHint: the tool reaches outside entities (the web, other
	// people). Listed, not used by the rules.
	OpenWorldHint *bool `json:"openWorldHint,omitempty"`
}

// clone returns a deep copy of a (nil for nil).
func (a *ToolAnnotations) clone() *ToolAnnotations {
	if a == nil {
		return nil
	}
	b := func(p *bool) *bool {
		if p == nil {
			return nil
		}
		v := *p
		return &v
	}
	return &ToolAnnotations{b(a.ReadOnlyHint), b(a.DestructiveHint), b(a.IdempotentHint), b(a.OpenWorldHint)}
}

var effectsNames = [...]string{"", "read_only", "side_effecting", "destructive"}

// String returns the name of e used in catalog files: "read_only",
// "side_effecting", "destructive", or "" for EffectsFromAnnotations.
func (e Effects) String() string {
	if int(e) < len(effectsNames) {
		return effectsNames[e]
	}
	return "Effects(" + strconv.Itoa(int(e)) + ")"
}

// resolve returns the effects that apply: the explicit setting, or what
// the annotations say.
func (e Effects) resolve(a *ToolAnnotations) Effects {
	switch {
	case e != EffectsFromAnnotations:
		return e
	case a == nil:
		return EffectsSideEffecting
	case a.ReadOnlyHint != nil && *a.ReadOnlyHint:
		return EffectsReadOnly
	case a.DestructiveHint != nil && !*a.DestructiveHint:
		return EffectsSideEffecting
	}
	return EffectsDestructive
}

// Catalog is the set of operations Decide knows. Build one with
// [NewCatalog] or [DecodeCatalog]; it cannot change afterwards and is safe
// for concurrent use. A nil *Catalog is the default catalog; the zero
// Catalog has no operations.
type Catalog struct {
	ops   []catalogEntry
	byKey map[opKey]int // provider and name or alias → index in ops
}

// catalogEntry is one compiled operation.
type catalogEntry struct {
	op      Operation     // a copy the caller cannot reach
	schema  payloadSchema // nil: any object
	effects Effects       // resolved
}

type opKey struct{ provider, name string }

// NewCatalog returns a catalog of ops. Every problem is reported at once in
// an *Error whose details point into ops as if it were a JSON array, for
// example "/2/schema/properties/id/format" or "/0/aliases/1": a missing
// provider or name, a name or alias used twice for one provider
// (duplicate_operation), an Effects value out of range, and every schema
// problem (see Operation.Schema for the vocabulary), with Check's codes; a
// $ref to another document is unsupported_schema_keyword at the $ref.
//
// To add operations to the built-in ones, pass
// DefaultCatalog().Operations() first.
func NewCatalog(ops ...Operation) (*Catalog, error) {
	c, err := newCatalog(ops, "", 0)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// newCatalog builds a catalog of ops, whose first builtins entries are
// built-in operations (trusted, and left out of pointers); the others are
// reported under base, counted from 0.
func newCatalog(ops []Operation, base string, builtins int) (*Catalog, *Error) {
	c := &Catalog{ops: make([]catalogEntry, 0, len(ops)), byKey: make(map[opKey]int, 2*len(ops))}
	var issues []Issue
	fail := func(path string, code IssueCode, msg string) {
		issues = append(issues, Issue{Path: path, Code: code, Message: msg})
	}
	for i := range ops {
		at := base + "/" + strconv.Itoa(i-builtins)
		op := ops[i]
		op.Aliases = slices.Clone(op.Aliases)
		op.URLMembers = slices.Clone(op.URLMembers)
		op.Schema = slices.Clone(op.Schema)
		if len(op.Schema) == 0 {
			op.Schema = nil // empty is absent: any object
		}
		op.Annotations = op.Annotations.clone()
		if op.Provider == "" {
			fail(at+"/provider", IssueRequired, "expected a non-empty provider")
		}
		if op.Name == "" {
			fail(at+"/name", IssueRequired, "expected a non-empty operation name")
		}
		if op.Effects > EffectsDestructive {
			fail(at+"/effects", IssueEnum, "expected one of the Effects constants, found "+op.Effects.String())
		}
		e := catalogEntry{op: op, effects: op.Effects.resolve(op.Annotations)}
		if op.Schema != nil {
			compile := compileOperationSchema
			if op.AssertFormat {
				compile = compileOperationSchemaAssertingFormat
			}
			s, serr := compile(op.Schema, at+"/schema")
			if serr != nil {
				issues = append(issues, serr.Details...)
			} else {
				e.schema = s
			}
		}
		names := append([]string{op.Name}, op.Aliases...)
		for j, name := range names {
			path := at + "/name"
			if j > 0 {
				path = at + "/aliases/" + strconv.Itoa(j-1)
				if name == "" {
					fail(path, IssueRequired, "expected a non-empty alias")
					continue
				}
			}
			if name == "" {
				continue
			}
			k := opKey{op.Provider, name}
			if prev, dup := c.byKey[k]; dup {
				where := "is a built-in operation"
				if prev >= builtins {
					where = "is already declared at " + base + "/" + strconv.Itoa(prev-builtins)
				}
				fail(path, IssueDuplicateOperation, "operation "+strconv.Quote(op.Provider+"/"+name)+" "+where)
				continue
			}
			c.byKey[k] = len(c.ops)
		}
		c.ops = append(c.ops, e)
	}
	if len(issues) > 0 {
		e := issuesError(issues)
		for _, is := range issues {
			switch is.Code {
			case IssueInvalidJSON, IssueInvalidUTF8, IssueDuplicateKey:
				e.Code, e.Message = ErrorInvalidJSON, "a schema is not valid JSON"
			}
		}
		if e.Code == ErrorInvalidRequest {
			e.Message = "the catalog is not valid"
			if len(issues) > 1 {
				e.Message += " (" + strconv.Itoa(len(issues)) + " problems)"
			}
		}
		return nil, e
	}
	return c, nil
}

// compileOperationSchema compiles an operation's payload schema, ignoring
// annotation keywords. Problems are reported under base.
func compileOperationSchema(text []byte, base string) (payloadSchema, *Error) {
	if len(text) > MaxSchemaBytes {
		return nil, &Error{Code: ErrorSchemaTooLarge, Message: "the schema is larger than 32768 bytes",
			Details: []Issue{{Path: base, Code: IssueSchemaTooLarge,
				Message: "expected at most 32768 bytes, found " + strconv.Itoa(len(text))}}}
	}
	v, err := strictjson.Parse(text, strictjson.Limits{MaxDepth: maxCheckDepth})
	if err != nil {
		pe := parseErrorAt(err, base, strictjson.Limits{MaxDepth: maxCheckDepth})
		if len(pe.Details) == 0 {
			pe.Details = []Issue{{Path: base, Code: IssueInvalidJSON, Message: pe.Message}}
		}
		return nil, pe
	}
	return compileCached(useTool, v, base)
}

// Operations returns the catalog's operations in the order they were
// given. The result is a copy; changing it does not change the catalog.
// Effects hold what was given, not what the annotations resolved to (see
// [Catalog.EffectsOf]).
func (c *Catalog) Operations() []Operation {
	c = c.orDefault()
	out := make([]Operation, len(c.ops))
	for i, e := range c.ops {
		out[i] = e.op
		out[i].Aliases = slices.Clone(e.op.Aliases)
		out[i].URLMembers = slices.Clone(e.op.URLMembers)
		out[i].Schema = slices.Clone(e.op.Schema)
		out[i].Annotations = e.op.Annotations.clone()
	}
	return out
}

// EffectsOf returns the effects the rules apply to the operation that
// provider and operation (a name or an alias) name, with annotations
// resolved, and false when the catalog has no such operation.
func (c *Catalog) EffectsOf(provider, operation string) (Effects, bool) {
	e := c.orDefault().lookup(provider, operation)
	if e == nil {
		return 0, false
	}
	return e.effects, true
}

// Decide is [Decide] with the operations of c instead of the default
// catalog's.
func (c *Catalog) Decide(req *ToolCallRequest) (*ToolCallDecision, error) {
	if req == nil {
		return nil, &Error{Code: ErrorInvalidRequest, Message: "the tool-call request is nil"}
	}
	var in toolCallInput
	defer in.tree.Release()
	if err := readToolCallRequest(req, &in); err != nil {
		return nil, err
	}
	return c.orDefault().decide(req, &in)
}

func init() { redecide.Decide = decideKeeping }

// decideKeeping is redecide.Decide: Decide, reading req.Tool with m.
func decideKeeping(c *Catalog, req ToolCallRequest, m redecide.Memo) (*ToolCallDecision, redecide.Memo, error) {
	in := toolCallInput{memo: m, keep: true}
	if err := readToolCallRequest(&req, &in); err != nil {
		return nil, in.memo, err
	}
	dec, err := c.orDefault().decide(&req, &in)
	return dec, in.memo, err
}

// DecideJSON is [DecideJSON] with the operations of c instead of the
// default catalog's.
func (c *Catalog) DecideJSON(data []byte) (*ToolCallDecision, error) {
	root, perr := parseObject(data, toolCallLimits, strictjson.ParseScratch)
	if perr != nil {
		return nil, perr
	}
	defer root.Release() // the decision holds no Value of the tree
	var req ToolCallRequest
	var in toolCallInput
	if err := decodeToolCall(root, &req, &in); err != nil {
		return nil, err
	}
	return c.orDefault().decide(&req, &in)
}

// CheckArguments checks args, the arguments of a call of the operation
// that provider and operation (a name or an alias) name, against that
// operation's rules: its schema, compiled when c was built, and its URL
// members. It is the check of [Decide]'s invalid_payload rule alone,
// without the rest of a decision (no fingerprint, history or budget), for
// a guard that validates each call's arguments before it decides or
// sends it. Issues point into args: "" is args itself, "/to/0" the first
// item of its member "to"; they are nil when args are valid.
//
// args must be one JSON object within Decide's limits: otherwise the
// *Error is invalid_json (not JSON), invalid_request (not an object) or
// limit_exceeded (too deep or too many values). An operation c does not
// have is invalid_request, with an unknown_operation detail saying what
// c has. A schema that needs more work on args than one call may use is
// limit_exceeded (max_work), as in Decide.
func (c *Catalog) CheckArguments(provider, operation string, args []byte) ([]Issue, error) {
	c = c.orDefault()
	op := c.lookup(provider, operation)
	if op == nil {
		is := c.unknownIssues(&ToolCall{Provider: provider, Operation: operation})[0]
		is.Path = ""
		return nil, &Error{Code: ErrorInvalidRequest, Message: is.Message, Details: []Issue{is}}
	}
	// A copy, so that no issue can hold the caller's bytes.
	root, err := strictjson.ParseScratch(bytes.Clone(args), toolCallLimits)
	if err != nil {
		return nil, ParseError(err)
	}
	defer root.Release() // the issues hold no Value of the tree
	if root.Kind() != strictjson.Object {
		return nil, &Error{Code: ErrorInvalidRequest, Message: "the arguments must be a JSON object",
			Details: []Issue{{Path: "", Code: IssueType, Message: "expected the arguments as an object, found " + kindName(root)}}}
	}
	issues, lerr := op.payloadIssues(root, "")
	if lerr != nil {
		return nil, lerr
	}
	return issues, nil
}

func (c *Catalog) orDefault() *Catalog {
	if c == nil {
		return defaultCatalog
	}
	return c
}

func (c *Catalog) lookup(provider, operation string) *catalogEntry {
	if i, ok := c.byKey[opKey{provider, operation}]; ok {
		return &c.ops[i]
	}
	return nil
}

// payloadIssues checks a payload, found at JSON Pointer path, against
// the operation's rules. It returns a limit_exceeded error, and no
// issues, when the schema needs more work on the payload than one call
// may use.
func (e *catalogEntry) payloadIssues(payload strictjson.Value, path string) ([]Issue, *Error) {
	errs := issueList{max: maxCheckErrors}
	// A call through the interface would make errs escape (one allocation
	// per decision); the concrete calls keep it on the stack.
	var err *Error
	switch s := e.schema.(type) {
	case *schema:
		err = s.validate(payload, path, &errs)
	case *fullDoc:
		err = s.validate(payload, path, &errs)
	}
	if err != nil {
		return nil, err
	}
	for _, m := range e.op.URLMembers {
		if u, ok := payload.Get(m); ok && u.Kind() == strictjson.String {
			if msg := checkAbsoluteURL(u.Str()); msg != "" {
				errs.add(Issue{Path: child(path, m), Code: IssueAbsoluteURL, Message: msg})
			}
		}
	}
	return errs.issues, nil
}

// reusable reports whether a prior success may stand in for a call.
func (e *catalogEntry) reusable() bool { return e.effects == EffectsReadOnly }
