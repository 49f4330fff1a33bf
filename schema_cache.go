package preflight

import (
	"bytes"
	"hash/maphash"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/agentpreflight/preflight/internal/pattern"
	"github.com/agentpreflight/preflight/strictjson"
)

// SchemaCacheLimits bounds the package's cache of compiled schemas.
//
// An agent sends the same tool schema again and again, so [CheckJSON],
// [Check] and [NewCatalog] (and the catalogs [DecodeCatalog] builds) keep
// the schemas they compiled, looked up by their exact text: a schema met
// again is not compiled again. The cache never changes an answer: a
// result, or an error, is byte for byte what compiling afresh gives. A
// schema that does not compile is not kept, and a schema is looked up by
// a hash of its text that is then confirmed by comparing the text itself,
// so two different schemas never share an entry.
//
// When either limit is reached the least recently used schemas are
// dropped. Bytes counts, for each schema, its text and an estimate of its
// compiled form and parsed tree (about 12 bytes per byte of text for the
// schemas agents send; see [DefaultSchemaCacheLimits] for what the default
// holds), plus 8 KiB for each distinct pattern: a kept schema's patterns
// keep the matching steps they have worked out, up to that much, so that
// the next body's strings are matched by table lookups (the work a match
// is counted, and so every answer, stays what a fresh schema gives).
type SchemaCacheLimits struct {
	// Entries is the most schemas kept. Zero or less turns the cache off.
	Entries int
	// Bytes is the most memory, as estimated, the kept schemas may hold.
	// Zero or less turns the cache off.
	Bytes int64
}

// DefaultSchemaCacheLimits are the cache's limits until
// [SetSchemaCacheLimits] changes them: 1,024 schemas and 32 MiB, which
// holds a thousand typical tool schemas (1 to 3 KB of text) or about a
// hundred of the largest (32 KB, [MaxSchemaBytes]).
var DefaultSchemaCacheLimits = SchemaCacheLimits{Entries: 1024, Bytes: 32 << 20}

// SetSchemaCacheLimits replaces the cache of compiled schemas with an
// empty one of limits l (a zero limit turns it off) and returns the
// limits it had. It is safe to call at any time, from any goroutine:
// calls under way finish with the cache they started with.
func SetSchemaCacheLimits(l SchemaCacheLimits) SchemaCacheLimits {
	var next *schemaCache
	if l.Entries > 0 && l.Bytes > 0 {
		next = newSchemaCache(l)
	}
	prev := schemaCacheNow.Swap(next)
	if prev == nil {
		return SchemaCacheLimits{}
	}
	return prev.limits
}

// schemaCacheNow is the cache in use; nil when it is off.
var schemaCacheNow atomic.Pointer[schemaCache]

func init() { schemaCacheNow.Store(newSchemaCache(DefaultSchemaCacheLimits)) }

// cacheSeed seeds the hash of schema texts. It is random per process, so
// nobody can choose texts that collide; collisions would cost only time,
// since a hit is confirmed by comparing the texts.
var cacheSeed = maphash.MakeSeed()

// schemaCache is a bounded, least-recently-used map from (use, base,
// schema text) to the compiled schema. It is safe for concurrent use.
// Compiled schemas are immutable (their validators keep every state of
// a walk in the walk), so one entry serves any number of goroutines.
type schemaCache struct {
	limits SchemaCacheLimits

	mu     sync.Mutex
	byHash map[uint64]*cacheEntry // the first entry of each hash; same hashes chain through sameHash
	head   cacheEntry             // sentinel of the recency list: head.next is the most recent
	n      int
	bytes  int64
}

// cacheEntry is one compiled schema and what it was compiled from.
type cacheEntry struct {
	hash     uint64
	use      schemaUse
	base     string
	text     []byte           // the schema's text, the cache's own copy
	tree     strictjson.Value // text parsed; compiled points into it
	canon    []byte           // tree's RFC 8785 form, for requestHash; nil: not worked out
	compiled payloadSchema
	cost     int64
	sameHash *cacheEntry

	prev, next *cacheEntry
}

func newSchemaCache(l SchemaCacheLimits) *schemaCache {
	c := &schemaCache{limits: l, byHash: make(map[uint64]*cacheEntry)}
	c.head.prev, c.head.next = &c.head, &c.head
	return c
}

// schemaHash is the lookup hash of a schema text compiled for use at base.
func schemaHash(use schemaUse, base, text string) uint64 {
	return maphash.String(cacheSeed, text) ^ bits.RotateLeft64(maphash.String(cacheSeed, base), 29) ^ uint64(use)
}

// get returns the entry of the schema compiled for use at base from
// text, or nil.
func (c *schemaCache) get(h uint64, use schemaUse, base, text string) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	for e := c.byHash[h]; e != nil; e = e.sameHash {
		if e.use == use && e.base == base && string(e.text) == text {
			if c.head.next != e {
				e.unlink()
				c.pushFront(e)
			}
			return e
		}
	}
	return nil
}

// lookupCheckSchema returns the entry of the check-request schema whose
// text is text, or nil. It is get for text that is still bytes, without
// making a string of them.
func (c *schemaCache) lookupCheckSchema(text []byte) *cacheEntry {
	h := maphash.Bytes(cacheSeed, text) ^ bits.RotateLeft64(maphash.String(cacheSeed, checkSchemaBase), 29) ^ uint64(useCheckRequest)
	c.mu.Lock()
	defer c.mu.Unlock()
	for e := c.byHash[h]; e != nil; e = e.sameHash {
		if e.use == useCheckRequest && e.base == checkSchemaBase && string(e.text) == string(text) {
			if c.head.next != e {
				e.unlink()
				c.pushFront(e)
			}
			return e
		}
	}
	return nil
}

// recentCheckSchema returns the entry of one of the few most recently
// used check-request schemas whose text data starts with, or nil. It
// needs no scan of data for the text's end: a check-request schema is an
// object, whose text ends with its closing brace. The caller confirms that
// the document's schema is there.
func (c *schemaCache) recentCheckSchema(data []byte) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for e := c.head.next; e != &c.head && n < recentChecked; e, n = e.next, n+1 {
		if e.use == useCheckRequest && e.base == checkSchemaBase && bytes.HasPrefix(data, e.text) {
			if c.head.next != e {
				e.unlink()
				c.pushFront(e)
			}
			return e
		}
	}
	return nil
}

// recentChecked is how many of the most recent entries recentCheckSchema
// compares.
const recentChecked = 4

// checkSchemaBase is the JSON Pointer of a check request's schema.
const checkSchemaBase = "/schema"

// put keeps e, unless an equal entry is there already (another goroutine
// compiled the same schema meanwhile) or e alone is over the limits, and
// drops the least recently used entries until the limits hold.
func (c *schemaCache) put(e *cacheEntry) {
	if e.cost > c.limits.Bytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	first := c.byHash[e.hash]
	for o := first; o != nil; o = o.sameHash {
		if o.use == e.use && o.base == e.base && string(o.text) == string(e.text) {
			return
		}
	}
	e.sameHash = first
	c.byHash[e.hash] = e
	c.pushFront(e)
	c.n++
	c.bytes += e.cost
	for c.n > c.limits.Entries || c.bytes > c.limits.Bytes {
		c.remove(c.head.prev)
	}
}

// remove drops e from the list and the map.
func (c *schemaCache) remove(e *cacheEntry) {
	e.unlink()
	c.n--
	c.bytes -= e.cost
	p := c.byHash[e.hash]
	if p == e {
		if e.sameHash == nil {
			delete(c.byHash, e.hash)
		} else {
			c.byHash[e.hash] = e.sameHash
		}
		return
	}
	for p.sameHash != e {
		p = p.sameHash
	}
	p.sameHash = e.sameHash
}

func (c *schemaCache) pushFront(e *cacheEntry) {
	e.prev, e.next = &c.head, c.head.next
	c.head.next.prev = e
	c.head.next = e
}

func (e *cacheEntry) unlink() {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

// cacheCostPerByte and cacheCostFixed estimate the memory an entry holds
// from its text's length: the text, its parsed tree (16 bytes per value)
// and the compiled schemas. TestSchemaCacheFlood measures the real figure
// and fails when it is above the estimate.
const (
	cacheCostPerByte = 12
	cacheCostFixed   = 512
)

// compileCached is compileFor through the cache: the schema v, whose text
// is v.Raw(), compiled for use at base. A compiled schema from the cache
// keeps nothing of v, so v's tree may be released afterwards whether it
// came from the cache or not. Errors are never cached: a schema that does
// not compile is compiled again, and reported the same way, each time.
func compileCached(use schemaUse, v strictjson.Value, base string) (payloadSchema, *Error) {
	s, _, err := compileEntry(schemaCacheNow.Load(), use, v, base)
	return s, err
}

// compileEntry is compileCached with cache c (nil: none), also returning
// the entry that holds the compiled schema, if any.
func compileEntry(c *schemaCache, use schemaUse, v strictjson.Value, base string) (payloadSchema, *cacheEntry, *Error) {
	if c == nil {
		s, err := compileFor(use, v, base)
		return s, nil, err
	}
	text := v.Raw()
	h := schemaHash(use, base, text)
	if e := c.get(h, use, base, text); e != nil {
		return e.compiled, e, nil
	}
	// The cache's entry must not point into v's tree or the caller's
	// bytes, which may be released or reused: compile from a copy.
	own := []byte(text)
	ov, perr := strictjson.Parse(own, strictjson.Limits{MaxDepth: maxCheckDepth})
	if perr != nil {
		s, err := compileFor(use, v, base) // cannot happen for a parsed value; never cache it
		return s, nil, err
	}
	s, err := compileFor(use, ov, base)
	if err != nil {
		return nil, nil, err
	}
	// Marked before put publishes it. A kept schema's patterns keep warm
	// matchers, counted at their bound.
	var patterns int
	switch root := s.(type) {
	case *schema:
		if root.kind == objectSchema {
			root.shared, patterns = true, int(root.patterns)
		}
	case *fullDoc:
		root.shared, patterns = true, root.patterns
	}
	e := &cacheEntry{hash: h, use: use, base: base, text: own, tree: ov, compiled: s,
		cost: int64(len(text))*cacheCostPerByte + cacheCostFixed + int64(patterns)*pattern.WarmBytes}
	if use == useCheckRequest {
		if canon, cerr := strictjson.AppendCanonical(nil, ov); cerr == nil {
			e.canon = canon
			e.cost += int64(len(canon))
		}
	}
	c.put(e)
	return s, e, nil
}

// topMemberSpan returns the span of the value of the first member of the
// JSON object in data whose name is spelled exactly key (with its quotes),
// or -1, -1. It reads JSON's lexical structure only and checks nothing
// else: a caller uses the span only when its text is one it knows to be a
// complete JSON value, which a parser of data would read as exactly that
// value (a JSON value ends where its own text says), or data has an
// error before it that the parser reports first either way.
func topMemberSpan(data []byte, key string) (int, int) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return -1, -1
	}
	for i++; ; {
		i = skipSpace(data, i)
		if i >= len(data) || data[i] != '"' {
			return -1, -1
		}
		ks := i
		if i = stringEnd(data, i); i < 0 {
			return -1, -1
		}
		name := data[ks:i]
		if i = skipSpace(data, i); i >= len(data) || data[i] != ':' {
			return -1, -1
		}
		vs := skipSpace(data, i+1)
		if i = valueEnd(data, vs); i < 0 {
			return -1, -1
		}
		if string(name) == key {
			return vs, i
		}
		if i = skipSpace(data, i); i >= len(data) || data[i] != ',' {
			return -1, -1
		}
		i++
	}
}

// firstMemberSpan returns the span of the value that follows the first
// occurrence of key and a colon in data, by lexical structure, or -1, -1.
// Nothing says the occurrence is a member name: the caller confirms it.
// (bytes.Index is vectorized; a scan of the structure before it is not.)
func firstMemberSpan(data []byte, key string) (int, int) {
	vs := firstMemberStart(data, key)
	if vs < 0 {
		return -1, -1
	}
	ve := valueEnd(data, vs)
	if ve < 0 || ve == vs {
		return -1, -1
	}
	return vs, ve
}

// firstMemberStart is where firstMemberSpan's value starts, or -1.
func firstMemberStart(data []byte, key string) int {
	p := bytes.Index(data, []byte(key))
	if p < 0 {
		return -1
	}
	i := skipSpace(data, p+len(key))
	if i >= len(data) || data[i] != ':' {
		return -1
	}
	return skipSpace(data, i+1)
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the offset just past the string that starts at
// data[i] (a quote), or -1.
func stringEnd(data []byte, i int) int {
	for i++; ; {
		j := bytes.IndexByte(data[i:], '"')
		if j < 0 {
			return -1
		}
		i += j
		backslashes := 0
		for k := i - 1; data[k] == '\\'; k-- {
			backslashes++
		}
		i++
		if backslashes%2 == 0 {
			return i
		}
	}
}

// valueEnd returns the offset just past the value that starts at data[i],
// by its lexical structure, or -1.
func valueEnd(data []byte, i int) int {
	depth := 0
	for i < len(data) {
		switch data[i] {
		case '"':
			if i = stringEnd(data, i); i < 0 {
				return -1
			}
			if depth == 0 {
				return i
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i // the end of a scalar
			}
			if depth--; depth == 0 {
				return i + 1
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
		}
		i++
	}
	if depth == 0 {
		return i
	}
	return -1
}
