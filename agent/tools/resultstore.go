package tools

import (
	"container/list"
	"context"
	"errors"
	"strconv"
	"sync"
)

// ResultStore keeps the results of tool calls so that a reuse decision can
// hand the saved result back instead of calling again. Results are opaque
// bytes: a store returns exactly what it was given. Implementations must be
// safe for concurrent use.
type ResultStore interface {
	// Put saves result and returns the reference Get finds it by. A store
	// may refuse a result (for example one larger than its limit) with an
	// error; the call's result is then not reusable.
	Put(ctx context.Context, result []byte) (ref string, err error)
	// Get returns a copy of the bytes saved under ref, and false when the
	// store does not have them (never saved, or evicted).
	Get(ctx context.Context, ref string) ([]byte, bool)
}

// ErrResultTooLarge is what a [MemoryResultStore] returns for a result larger
// than its byte limit.
var ErrResultTooLarge = errors.New("tools: result larger than the store's byte limit")

// MemoryResultStore is the default [ResultStore]: results in memory, bounded by
// an entry count and a byte total, least recently used evicted first. A
// reference names one Put: it is never reused for other bytes.
type MemoryResultStore struct {
	maxEntries int
	maxBytes   int

	mu    sync.Mutex
	next  uint64
	bytes int
	lru   *list.List // of *storedResult, most recently used first
	byRef map[string]*list.Element
}

type storedResult struct {
	ref  string
	data []byte
}

// The limits of [NewMemoryResultStore] when it is given zero.
const (
	DefaultMemoryEntries = 256
	DefaultMemoryBytes   = 16 << 20
)

// NewMemoryResultStore returns a store holding at most maxEntries results and
// maxBytes bytes of results; zero or less means DefaultMemoryEntries and
// DefaultMemoryBytes.
func NewMemoryResultStore(maxEntries, maxBytes int) *MemoryResultStore {
	if maxEntries <= 0 {
		maxEntries = DefaultMemoryEntries
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMemoryBytes
	}
	return &MemoryResultStore{maxEntries: maxEntries, maxBytes: maxBytes, lru: list.New(), byRef: make(map[string]*list.Element)}
}

// Put saves a copy of result, evicting the least recently used results
// until both limits hold. A result larger than the byte limit is refused
// with ErrResultTooLarge.
func (s *MemoryResultStore) Put(_ context.Context, result []byte) (string, error) {
	if len(result) > s.maxBytes {
		return "", ErrResultTooLarge
	}
	data := append([]byte(nil), result...)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	ref := "mem:" + strconv.FormatUint(s.next, 10)
	s.byRef[ref] = s.lru.PushFront(&storedResult{ref, data})
	s.bytes += len(data)
	for s.lru.Len() > s.maxEntries || s.bytes > s.maxBytes {
		old := s.lru.Back().Value.(*storedResult)
		s.lru.Remove(s.lru.Back())
		delete(s.byRef, old.ref)
		s.bytes -= len(old.data)
	}
	return ref, nil
}

// Get returns a copy of the result saved under ref and marks it recently
// used.
func (s *MemoryResultStore) Get(_ context.Context, ref string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	el, ok := s.byRef[ref]
	if !ok {
		return nil, false
	}
	s.lru.MoveToFront(el)
	return append([]byte(nil), el.Value.(*storedResult).data...), true
}

// Len returns the number of results held and their total size in bytes.
func (s *MemoryResultStore) Len() (entries, bytes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lru.Len(), s.bytes
}
