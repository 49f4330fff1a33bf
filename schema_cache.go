package preflight

import (
	"hash/maphash"
	"math/bits"
	"sync"
	"sync/atomic"

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
// holds).
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
	text     []byte // the schema's text, the cache's own copy
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

// get returns the schema compiled for use at base from text, or nil.
func (c *schemaCache) get(h uint64, use schemaUse, base, text string) payloadSchema {
	c.mu.Lock()
	defer c.mu.Unlock()
	for e := c.byHash[h]; e != nil; e = e.sameHash {
		if e.use == use && e.base == base && string(e.text) == text {
			if c.head.next != e {
				e.unlink()
				c.pushFront(e)
			}
			return e.compiled
		}
	}
	return nil
}

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
	c := schemaCacheNow.Load()
	if c == nil {
		return compileFor(use, v, base)
	}
	text := v.Raw()
	h := schemaHash(use, base, text)
	if s := c.get(h, use, base, text); s != nil {
		return s, nil
	}
	// The cache's entry must not point into v's tree or the caller's
	// bytes, which may be released or reused: compile from a copy.
	own := []byte(text)
	ov, perr := strictjson.Parse(own, strictjson.Limits{MaxDepth: maxCheckDepth})
	if perr != nil {
		return compileFor(use, v, base) // cannot happen for a parsed value; never cache it
	}
	s, err := compileFor(use, ov, base)
	if err != nil {
		return nil, err
	}
	c.put(&cacheEntry{hash: h, use: use, base: base, text: own, compiled: s,
		cost: int64(len(text))*cacheCostPerByte + cacheCostFixed})
	return s, nil
}

// compileCheckRequestCached is compileCheckRequestSchema through the cache.
func compileCheckRequestCached(v strictjson.Value, base string) (*schema, *Error) {
	s, err := compileCached(useCheckRequest, v, base)
	if err != nil {
		return nil, err
	}
	return s.(*schema), nil
}
