package preflight

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
)

// answerBytes is everything a caller can see of one answer: the result or
// the error, as JSON, with the error's Go type.
func answerBytes(res any, err error) string {
	if err != nil {
		out, merr := json.Marshal(err)
		return fmt.Sprintf("error %T %s %v %s", err, err.Error(), merr, out)
	}
	out, merr := json.Marshal(res)
	return fmt.Sprintf("result %s %v", out, merr)
}

// cacheCase is one schema and body, asked every way the cache serves.
type cacheCase struct{ schema, body []byte }

// checkRequestJSON is a /check-request document carrying c.
func (c cacheCase) checkRequestJSON() []byte {
	var b bytes.Buffer
	b.WriteString(`{"request":{"method":"POST","url":"https://api.example.com/v1/x","body":`)
	b.Write(c.body)
	b.WriteString(`},"schema":`)
	b.Write(c.schema)
	b.WriteString(`}`)
	return b.Bytes()
}

// answers asks CheckJSON, Check and a catalog's Decide about c with the
// cache in use now.
func (c cacheCase) answers() []string {
	var out []string
	res, err := CheckJSON(c.checkRequestJSON())
	out = append(out, answerBytes(res, err))
	res, err = Check(&CheckRequest{Request: ProposedRequest{Method: "POST", URL: "https://api.example.com/v1/x", Body: c.body}, Schema: c.schema})
	out = append(out, answerBytes(res, err))
	cat, err := NewCatalog(Operation{Provider: "p", Name: "op", Schema: c.schema})
	out = append(out, answerBytes(cat != nil, err))
	if err == nil {
		d, err := cat.Decide(&ToolCallRequest{RunID: "r", StepID: "s",
			Tool: ToolCall{Provider: "p", Operation: "op", Request: c.body, EstimatedExternalCostUSD: "0.01"}})
		out = append(out, answerBytes(d, err))
	}
	return out
}

// withCache runs f with c as the package's cache (nil: off) and puts the
// previous one back. The package's tests do not run in parallel.
func withCache(c *schemaCache, f func()) {
	prev := schemaCacheNow.Swap(c)
	defer schemaCacheNow.Store(prev)
	f()
}

// uncachedAnswers is c.answers() with the cache off.
func (c cacheCase) uncachedAnswers() (out []string) {
	withCache(nil, func() { out = c.answers() })
	return out
}

func compareAnswers(t *testing.T, what string, want, got []string) {
	t.Helper()
	for i := range max(len(want), len(got)) {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			t.Fatalf("%s: answer %d differs from the uncached one:\nuncached: %s\ncached:   %s", what, i, w, g)
		}
	}
}

// cacheSeeds are the schemas and bodies of the benchmark corpus and of
// a few schemas of the full vocabulary.
func cacheSeeds(t testing.TB) []cacheCase {
	var out []cacheCase
	for _, data := range benchFiles(t, "check_*.json") {
		var doc struct {
			Request struct{ Body json.RawMessage } `json:"request"`
			Schema  json.RawMessage                `json:"schema"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		out = append(out, cacheCase{schema: doc.Schema, body: doc.Request.Body})
	}
	out = append(out,
		cacheCase{[]byte(`{"type":"object","oneOf":[{"required":["a"]},{"required":["b"]}],"properties":{"a":{"pattern":"^x+$"}}}`), []byte(`{"a":"xy"}`)},
		cacheCase{[]byte(`{"$defs":{"n":{"type":"integer","minimum":1}},"type":"object","properties":{"n":{"$ref":"#/$defs/n"}}}`), []byte(`{"n":0}`)},
		cacheCase{[]byte(`{"type":"object","properties":{"x":{"format":"unknown-kw"}}}`), []byte(`{"x":1}`)},
		cacheCase{[]byte(`{"type":"object","properties":{"x":{"pattern":"("}}}`), []byte(`{"x":"a"}`)},
	)
	return out
}

// TestSchemaCacheSameAnswers is FuzzSchemaCache's check over its seeds,
// with a cache big enough to hit and one that always evicts.
func TestSchemaCacheSameAnswers(t *testing.T) {
	seeds := cacheSeeds(t)
	for _, lim := range []SchemaCacheLimits{DefaultSchemaCacheLimits, {Entries: 1, Bytes: 1 << 20}, {Entries: 100, Bytes: 1}} {
		c := newSchemaCache(lim)
		for round := range 2 {
			for i, sc := range seeds {
				want := sc.uncachedAnswers()
				withCache(c, func() {
					compareAnswers(t, fmt.Sprintf("%+v round %d seed %d", lim, round, i), want, sc.answers())
				})
			}
		}
	}
}

// TestSchemaCacheHits checks that a schema seen before is served from the
// cache (the same compiled schema), for each use and base apart.
func TestSchemaCacheHits(t *testing.T) {
	c := newSchemaCache(DefaultSchemaCacheLimits)
	doc := []byte(`{"request":{"method":"POST","url":"https://a.example/","body":{"q":"x"}},"schema":{"type":"object","properties":{"q":{"type":"string","pattern":"^[a-z]+$"}}}}`)
	withCache(c, func() {
		for range 3 {
			if _, err := CheckJSON(doc); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := NewCatalog(Operation{Provider: "p", Name: "a", Schema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","pattern":"^[a-z]+$"}}}`)}); err != nil {
			t.Fatal(err)
		}
	})
	if c.n != 2 {
		t.Fatalf("cache holds %d entries, want 2 (one per use: check request and tool schema)", c.n)
	}
	seen := map[schemaUse]bool{}
	for e := c.head.next; e != &c.head; e = e.next {
		seen[e.use] = true
	}
	if !seen[useCheckRequest] || !seen[useTool] {
		t.Fatalf("uses cached: %v, want both", seen)
	}
}

// TestSchemaCacheCollision forces two texts into one hash chain: each
// finds its own entry, and eviction unlinks from the middle of a chain.
func TestSchemaCacheCollision(t *testing.T) {
	c := newSchemaCache(SchemaCacheLimits{Entries: 3, Bytes: 1 << 20})
	mk := func(text string) *cacheEntry {
		s := &schema{}
		return &cacheEntry{hash: 7, use: useCheckRequest, base: "/schema", text: []byte(text), compiled: s, cost: 1}
	}
	a, b, d := mk("a"), mk("b"), mk("d")
	c.put(a)
	c.put(b)
	c.put(d)
	for _, e := range []*cacheEntry{a, b, d} {
		if got := c.get(7, useCheckRequest, "/schema", string(e.text)); got == nil || got.compiled != e.compiled {
			t.Fatalf("%s: got %+v, want its own entry", e.text, got)
		}
	}
	if got := c.get(7, useTool, "/schema", "a"); got != nil {
		t.Fatal("an entry of another use was served")
	}
	if got := c.get(7, useCheckRequest, "/other", "a"); got != nil {
		t.Fatal("an entry of another base was served")
	}
	c.get(7, useCheckRequest, "/schema", "b") // b is now the most recent, a the least
	c.get(7, useCheckRequest, "/schema", "d")
	e := mk("e")
	c.put(e) // evicts a, which is at the end of the chain
	if c.get(7, useCheckRequest, "/schema", "a") != nil || c.n != 3 {
		t.Fatalf("a was not evicted (n=%d)", c.n)
	}
	c.put(mk("f")) // evicts b, in the middle of the chain
	for _, want := range []string{"d", "e", "f"} {
		if c.get(7, useCheckRequest, "/schema", want) == nil {
			t.Fatalf("%s was lost", want)
		}
	}
	if c.get(7, useCheckRequest, "/schema", "b") != nil {
		t.Fatal("b was not evicted")
	}
}

// TestSchemaCacheConcurrent serves the same and different schemas from
// many goroutines at once (run with -race); every answer is the uncached
// one.
func TestSchemaCacheConcurrent(t *testing.T) {
	seeds := cacheSeeds(t)
	want := make([][]string, len(seeds))
	for i, sc := range seeds {
		want[i] = sc.uncachedAnswers()
	}
	c := newSchemaCache(SchemaCacheLimits{Entries: 6, Bytes: 1 << 20})
	withCache(c, func() {
		var wg sync.WaitGroup
		errs := make(chan string, 8)
		for g := range 8 {
			wg.Go(func() {
				for round := range 20 {
					i := (g + round) % len(seeds)
					got := seeds[i].answers()
					for j := range got {
						if got[j] != want[i][j] {
							errs <- fmt.Sprintf("seed %d answer %d: %s, want %s", i, j, got[j], want[i][j])
							return
						}
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Error(e)
		}
	})
}

// TestSetSchemaCacheLimits turns the cache off and on again.
func TestSetSchemaCacheLimits(t *testing.T) {
	prev := SetSchemaCacheLimits(SchemaCacheLimits{})
	defer SetSchemaCacheLimits(prev)
	if prev != DefaultSchemaCacheLimits {
		t.Fatalf("limits were %+v, want the defaults %+v", prev, DefaultSchemaCacheLimits)
	}
	if schemaCacheNow.Load() != nil {
		t.Fatal("a zero limit left a cache in use")
	}
	if got := SetSchemaCacheLimits(SchemaCacheLimits{Entries: 5, Bytes: 1 << 20}); got != (SchemaCacheLimits{}) {
		t.Fatalf("limits of the cache turned off: %+v", got)
	}
	if got := schemaCacheNow.Load(); got == nil || got.limits.Entries != 5 {
		t.Fatalf("cache in use: %+v", got)
	}
}

// TestTopMemberSpan finds a top-level member's value by lexical structure
// alone, and gives up on anything it cannot read.
func TestTopMemberSpan(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{`{"schema":{"a":1}}`, `{"a":1}`},
		{` { "request" : {"schema":2, "x":"\"}"} , "schema" : [1, {"b":"]"}] } `, `[1, {"b":"]"}]`},
		{`{"a":"\\","schema":true}`, `true`},
		{`{"a":"\\\"schema\":1","schema":-1.5e3}`, `-1.5e3`},
		{`{"schema":5}`, `5`},
		{`{"schema":"x\"y"}`, `"x\"y"`},
		{`{"sch\u0065ma":{}}`, ``},
		{`{"a":1}`, ``},
		{`{"a":{]]}`, ``},
		{`[{"schema":1}]`, ``},
		{`{"a" 1,"schema":1}`, ``},
		{`{"schema":{"a":"unterminated}`, ``},
		{``, ``},
	} {
		s, e := topMemberSpan([]byte(tc.doc), `"schema"`)
		got := ""
		if s >= 0 {
			got = tc.doc[s:e]
		}
		if got != tc.want {
			t.Errorf("%s: found %q, want %q", tc.doc, got, tc.want)
		}
	}
}
