package tools

import (
	"container/heap"
	"container/list"
	"context"
	"errors"
	"strconv"
	"sync"
	"time"
)

// TTLResultStore is a [ResultStore] that can be told how long a result
// must be kept. A [Session] saves through PutTTL when its result store has it,
// and through Put otherwise, so stores without it keep working.
type TTLResultStore interface {
	ResultStore
	// PutTTL saves result as Put does, asking that it be kept for at
	// least ttl from now: within it the result may be reused, after it
	// the store may drop it.
	PutTTL(ctx context.Context, result []byte, ttl time.Duration) (ref string, err error)
}

// ErrResultStoreFull is what a [SharedResultStore] view returns when saving a result
// would need room that other owners' results still within their TTL
// hold. The result is then not reusable.
var ErrResultStoreFull = errors.New("tools: result store full of other sessions' live results")

// ErrViewClosed is what a closed [ResultView] returns from Put.
var ErrViewClosed = errors.New("tools: result store view closed")

// The limits of [NewSharedResultStore] when its options leave them zero.
const (
	DefaultSharedEntries = 4096
	DefaultSharedBytes   = 64 << 20
)

// SharedResultStoreOptions configures a [SharedResultStore]. The zero value and nil
// both work.
type SharedResultStoreOptions struct {
	// MaxEntries and MaxBytes bound the whole store: all owners' results
	// together. Zero or less means DefaultSharedEntries and
	// DefaultSharedBytes.
	MaxEntries int
	MaxBytes   int
	// OwnerEntries and OwnerBytes bound each owner (each view). Zero or
	// less means a sixteenth of MaxEntries and MaxBytes (256 entries and
	// 4 MiB by default), so that sixteen owners at their quota fit
	// before anyone's save is refused. A result larger than OwnerBytes
	// is refused with ErrResultTooLarge.
	OwnerEntries int
	OwnerBytes   int
	// Now is the clock that dates saves and tells expired results. Nil
	// means time.Now. Tests pass a fake clock.
	Now func() time.Time
}

// SharedResultStore keeps the results of many owners (many sessions) in memory
// under one bound, each owner under a quota of its own, so that no owner's
// traffic evicts another owner's result still within its TTL. Each owner
// saves through its own [ResultView] (see [SharedResultStore.View]). A reference
// names one save: any view finds it, as long as it is kept, so sessions
// that share their history (a shared LedgerStore) reuse each other's
// results as they would with one MemoryResultStore.
//
// When an owner is over its quota, its own results make room: those past
// their TTL first, then its least recently used ones. When the whole store
// is full, anyone's results past their TTL make room, then the saving
// owner's own; a result of another owner within its TTL never does: the
// save is refused with ErrResultStoreFull instead, and that result is simply not
// reusable. Closing a view drops its results.
//
// Used itself as a [ResultStore], a SharedResultStore is one owner of its own;
// a [Session] given a SharedResultStore as its Results takes a view of its own
// instead, dropped by [Session.Close]. A SharedResultStore is safe for
// concurrent use.
type SharedResultStore struct {
	maxEntries, maxBytes     int
	ownerEntries, ownerBytes int
	now                      func() time.Time

	mu      sync.Mutex
	next    uint64
	bytes   int
	byRef   map[string]*sharedEntry
	expiry  expiryHeap  // every entry, earliest expiry first
	onlyOne *ResultView // the view Put and Get use; made on first use
}

// ResultView is one owner's part of a [SharedResultStore]: a [TTLResultStore]
// holding at most the store's owner quota. It is safe for concurrent use.
type ResultView struct {
	s *SharedResultStore
	// Guarded by s.mu.
	lru    list.List // of *sharedEntry, most recently used first
	bytes  int
	closed bool
}

var _ TTLResultStore = (*ResultView)(nil)
var _ TTLResultStore = (*SharedResultStore)(nil)

type sharedEntry struct {
	ref     string
	data    []byte
	owner   *ResultView
	expires time.Time // live up to and including this instant
	el      *list.Element
	index   int // in SharedResultStore.expiry
}

// NewSharedResultStore returns an empty shared store. opts may be nil.
func NewSharedResultStore(opts *SharedResultStoreOptions) *SharedResultStore {
	var o SharedResultStoreOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultSharedEntries
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultSharedBytes
	}
	if o.OwnerEntries <= 0 {
		o.OwnerEntries = max(o.MaxEntries/16, 1)
	}
	if o.OwnerBytes <= 0 {
		o.OwnerBytes = max(o.MaxBytes/16, 1)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &SharedResultStore{
		maxEntries: o.MaxEntries, maxBytes: o.MaxBytes,
		ownerEntries: min(o.OwnerEntries, o.MaxEntries), ownerBytes: min(o.OwnerBytes, o.MaxBytes),
		now: o.Now, byRef: make(map[string]*sharedEntry),
	}
}

// View returns a new owner's view of the store, empty, with the store's
// owner quota. Close it when the owner is done.
func (s *SharedResultStore) View() *ResultView { return &ResultView{s: s} }

// Len returns the number of results held by all owners and their total
// size in bytes.
func (s *SharedResultStore) Len() (entries, bytes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byRef), s.bytes
}

// Put saves result under the store's own owner, as [ResultView.Put] does.
func (s *SharedResultStore) Put(ctx context.Context, result []byte) (string, error) {
	return s.own().Put(ctx, result)
}

// PutTTL saves result under the store's own owner, as [ResultView.PutTTL]
// does.
func (s *SharedResultStore) PutTTL(ctx context.Context, result []byte, ttl time.Duration) (string, error) {
	return s.own().PutTTL(ctx, result, ttl)
}

// Get returns a result saved by [SharedResultStore.Put], as [ResultView.Get]
// does.
func (s *SharedResultStore) Get(ctx context.Context, ref string) ([]byte, bool) {
	return s.own().Get(ctx, ref)
}

func (s *SharedResultStore) own() *ResultView {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.onlyOne == nil {
		s.onlyOne = &ResultView{s: s}
	}
	return s.onlyOne
}

// Put saves result with no TTL: it is kept while no one needs its room.
// A caller that knows how long the result may be reused calls PutTTL.
func (v *ResultView) Put(ctx context.Context, result []byte) (string, error) {
	return v.PutTTL(ctx, result, 0)
}

// PutTTL saves a copy of result, to be kept at least ttl from now unless
// this view's own later saves need the room. It makes room as the
// [SharedResultStore] documents and returns ErrResultTooLarge for a result
// larger than the owner quota, ErrResultStoreFull when only other owners'
// results within their TTL could make room, and ErrViewClosed after
// Close.
func (v *ResultView) PutTTL(_ context.Context, result []byte, ttl time.Duration) (string, error) {
	s := v.s
	n := len(result)
	if n > s.ownerBytes {
		return "", ErrResultTooLarge
	}
	data := append([]byte(nil), result...)
	s.mu.Lock()
	defer s.mu.Unlock()
	if v.closed {
		return "", ErrViewClosed
	}
	now := s.now()
	full := func() bool { return len(s.byRef)+1 > s.maxEntries || s.bytes+n > s.maxBytes }
	for full() && len(s.expiry) > 0 && now.After(s.expiry[0].expires) {
		s.remove(s.expiry[0])
	}
	// Everything left is live: only this owner's own results may go, and
	// only if they make enough room.
	if full() && (len(s.byRef)-v.lru.Len()+1 > s.maxEntries || s.bytes-v.bytes+n > s.maxBytes) {
		return "", ErrResultStoreFull
	}
	for full() || v.lru.Len()+1 > s.ownerEntries || v.bytes+n > s.ownerBytes {
		s.remove(v.victim(now))
	}
	s.next++
	e := &sharedEntry{ref: "shared:" + strconv.FormatUint(s.next, 10), data: data, owner: v, expires: now.Add(max(ttl, 0))}
	e.el = v.lru.PushFront(e)
	v.bytes += n
	s.bytes += n
	s.byRef[e.ref] = e
	heap.Push(&s.expiry, e)
	return e.ref, nil
}

// victim returns the view's result to drop first: its least recently
// used one past its TTL, or else its least recently used one. The view
// has at least one. The caller holds s.mu.
func (v *ResultView) victim(now time.Time) *sharedEntry {
	if x := v.s.expiry; len(x) == 0 || !now.After(x[0].expires) {
		// Nothing in the store is past its TTL (x[0] expires first): the
		// view's least recently used result goes, without a walk of its
		// results.
		return v.lru.Back().Value.(*sharedEntry)
	}
	for el := v.lru.Back(); el != nil; el = el.Prev() {
		if e := el.Value.(*sharedEntry); now.After(e.expires) {
			return e
		}
	}
	return v.lru.Back().Value.(*sharedEntry)
}

// remove drops e. The caller holds s.mu.
func (s *SharedResultStore) remove(e *sharedEntry) {
	heap.Remove(&s.expiry, e.index)
	e.owner.lru.Remove(e.el)
	e.owner.bytes -= len(e.data)
	s.bytes -= len(e.data)
	delete(s.byRef, e.ref)
}

// Get returns a copy of the result saved under ref, by this view or
// another of the store, past its TTL or not, and marks it recently used
// among its owner's results; false when the store does not have it (never
// saved, or dropped).
func (v *ResultView) Get(_ context.Context, ref string) ([]byte, bool) {
	s := v.s
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byRef[ref]
	if !ok {
		return nil, false
	}
	e.owner.lru.MoveToFront(e.el)
	return append([]byte(nil), e.data...), true
}

// Len returns the number of results the view holds and their total size
// in bytes.
func (v *ResultView) Len() (entries, bytes int) {
	v.s.mu.Lock()
	defer v.s.mu.Unlock()
	return v.lru.Len(), v.bytes
}

// Close drops the view's results and refuses its later saves (with
// ErrViewClosed); no view finds them any more. Closing twice does
// nothing.
func (v *ResultView) Close() {
	s := v.s
	s.mu.Lock()
	defer s.mu.Unlock()
	v.closed = true
	for v.lru.Len() > 0 {
		s.remove(v.lru.Front().Value.(*sharedEntry))
	}
}

// expiryHeap orders entries by expiry, earliest first.
type expiryHeap []*sharedEntry

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].expires.Before(h[j].expires) }
func (h expiryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *expiryHeap) Push(x any) {
	e := x.(*sharedEntry)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *expiryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}
