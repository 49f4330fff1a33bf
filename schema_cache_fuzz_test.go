package preflight

import (
	"bytes"
	"fmt"
	"runtime"
	"strconv"
	"testing"
)

// fuzzCache persists across fuzz inputs, so later inputs meet schemas
// earlier ones left (and evicted): small enough to evict often.
var fuzzCache = newSchemaCache(SchemaCacheLimits{Entries: 8, Bytes: 256 << 10})

// FuzzSchemaCache asks the same questions with and without the cache of
// compiled schemas and wants the same answers, byte for byte: on a miss,
// on a hit, after a mutated schema was seen, and after the caller's bytes
// were overwritten.
func FuzzSchemaCache(f *testing.F) {
	for _, c := range cacheSeeds(f) {
		f.Add(c.schema, c.body, uint16(0), byte(' '))
	}
	f.Fuzz(func(t *testing.T, schema, body []byte, at uint16, to byte) {
		c := cacheCase{schema: schema, body: body}
		want := c.uncachedAnswers()
		mutated := cacheCase{schema: bytes.Clone(schema), body: body}
		if len(schema) > 0 {
			mutated.schema[int(at)%len(schema)] = to
		}
		wantMutated := mutated.uncachedAnswers()
		withCache(fuzzCache, func() {
			compareAnswers(t, "first", want, c.answers())
			compareAnswers(t, "again", want, c.answers())
			compareAnswers(t, "mutated", wantMutated, mutated.answers())
			// The caller reuses its buffer: the cached schema must not
			// have kept it.
			scratch := cacheCase{schema: bytes.Clone(schema), body: body}
			_ = scratch.answers()
			for i := range scratch.schema {
				scratch.schema[i] = '!'
			}
			compareAnswers(t, "after the caller's bytes changed", want, c.answers())
			compareAnswers(t, "mutated again", wantMutated, mutated.answers())
		})
	})
}

// TestSchemaCacheFlood sends many distinct schemas through a bounded
// cache: it keeps within its entry and byte limits, and the memory it
// really holds stays within the byte limit (the estimate is not low).
func TestSchemaCacheFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("floods the cache")
	}
	floods := 20000
	if raceEnabled() {
		floods = 3000 // still several times what either cache holds
	}
	for _, lim := range []SchemaCacheLimits{{Entries: 64, Bytes: 64 << 20}, {Entries: 1 << 20, Bytes: 4 << 20}} {
		t.Run(fmt.Sprintf("entries=%d,bytes=%d", lim.Entries, lim.Bytes), func(t *testing.T) {
			c := newSchemaCache(lim)
			base := heapAfterGC()
			var text int
			withCache(c, func() {
				for i := range floods {
					doc := floodRequest(i)
					text += len(doc)
					if _, err := CheckJSON(doc); err != nil {
						t.Fatal(err)
					}
					if c.n > lim.Entries || c.bytes > lim.Bytes {
						t.Fatalf("after %d schemas: %d entries, %d bytes, over %+v", i+1, c.n, c.bytes, lim)
					}
				}
			})
			held := heapAfterGC() - base
			t.Logf("%d entries, %d bytes estimated, %d bytes held on the heap (%.0f per entry), after %d schemas in %d bytes of requests",
				c.n, c.bytes, held, float64(held)/float64(max(c.n, 1)), floods, text)
			if held > c.bytes+1<<20 {
				t.Errorf("the cache holds %d bytes, more than its estimate of %d (plus 1 MiB of slack)", held, c.bytes)
			}
			runtime.KeepAlive(c)
		})
	}
}

// floodRequest is a check request whose schema is the i-th of a family of
// distinct, realistic tool schemas (about 1 KB, with patterns).
func floodRequest(i int) []byte {
	n := strconv.Itoa(1000 + i)
	return []byte(`{"request":{"method":"POST","url":"https://api.example.com/v1/send","body":{"to":"a@b.example","subject":"hi","n` + n + `":3}},` +
		`"schema":{"type":"object","required":["to","subject"],"additionalProperties":false,"properties":{` +
		`"to":{"type":"string","pattern":"^[a-z0-9._-]+@[a-z0-9.-]+$","maxLength":254},` +
		`"subject":{"type":"string","minLength":1,"maxLength":200},` +
		`"cc":{"type":"array","items":{"type":"string","pattern":"^[a-z0-9._-]+@[a-z0-9.-]+$"}},` +
		`"priority":{"type":"string","enum":["low","normal","high","urgent"]},` +
		`"body":{"type":"string","maxLength":100000},` +
		`"tags":{"type":"array","items":{"type":"string","pattern":"^tag-` + n + `-[a-z]+$"}},` +
		`"n` + n + `":{"type":"integer","minimum":0,"maximum":` + n + `9}}}}`)
}

func heapAfterGC() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// FuzzCheckJSONCached feeds arbitrary documents to CheckJSON with and
// without the cache: a schema met a second time is taken from the cache
// in place of the document's own text, and the answer must not change,
// whatever surrounds it.
func FuzzCheckJSONCached(f *testing.F) {
	addSeeds(f, "testdata/check/*.json")
	addSeeds(f, "testdata/bench/check_*.json")
	f.Add([]byte(`{"schema":{"type":"object"},"schema":{"type":"object"},"request":{"method":"GET","url":"https://a.example/"}}`))
	f.Add([]byte(`{"request":{"method":"GET","url":"https://a.example/","body":{"schema":{"type":"object"}}},"schema":{"type":"object"}}`))
	f.Add([]byte(`{"schema":{"type":"object"},"request":{"method":"POST","url":"https://a.example/","body":{"x":{"schema":{"type":"object"}}}}}`))
	f.Add([]byte(`{"schema":{"type":"object"},"request":{"method":"POST","url":"https://a.example/","body":{"x":"\"schema\":{\"type\":\"object\"}"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var want string
		withCache(nil, func() {
			res, err := CheckJSON(data)
			want = answerBytes(res, err)
		})
		withCache(fuzzCache, func() {
			for round := range 2 {
				res, err := CheckJSON(data)
				if got := answerBytes(res, err); got != want {
					t.Fatalf("round %d: cached answer differs:\nuncached: %s\ncached:   %s", round, want, got)
				}
			}
		})
	})
}
