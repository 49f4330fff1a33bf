package agent

import (
	"time"

	"github.com/agentpreflight/preflight"
)

// historyIndex is the in-memory store's history: the entries in the order
// they were recorded, each also linked into the list of its fingerprint
// and the list of its eviction class (see evictionRank), so that what one
// decision reads (the entries of one fingerprint), what recording drops
// (older entries of the same fingerprint) and what eviction picks (the
// oldest entry of the least useful class) cost the entries concerned, not
// the whole history. It holds at most preflight.MaxHistory entries; the
// slots of removed entries are used again.
type historyIndex struct {
	slots []histSlot
	free  []int32
	all   histList            // every entry, oldest recorded first
	byFP  map[string]histList // the entries of one fingerprint
	class [evictionClasses]histList
}

// evictionClasses is the number of ranks evictionRank gives.
const evictionClasses = 4

// none is the link to no slot.
const none = -1

// histSlot is one recorded entry and its links in the three lists.
type histSlot struct {
	e  Entry
	at time.Time
	// prev and next link the slot in all, byFP[e.Fingerprint] and
	// class[evictionRank(e)], in that order.
	prev, next [3]int32
}

// The lists a slot is linked into.
const (
	inAll = iota
	inFP
	inClass
)

// histList is a doubly linked list of slots, oldest first.
type histList struct {
	head, tail int32
	n          int
}

var emptyList = histList{head: none, tail: none}

func newHistoryIndex() historyIndex {
	h := historyIndex{all: emptyList, byFP: make(map[string]histList)}
	for i := range h.class {
		h.class[i] = emptyList
	}
	return h
}

// len is the number of entries.
func (h *historyIndex) len() int { return h.all.n }

// push links slot i at the tail of l, through links k.
func (h *historyIndex) push(l *histList, i int32, k int) {
	s := &h.slots[i]
	s.prev[k], s.next[k] = l.tail, none
	if l.tail == none {
		l.head = i
	} else {
		h.slots[l.tail].next[k] = i
	}
	l.tail = i
	l.n++
}

// unlink removes slot i from l, through links k.
func (h *historyIndex) unlink(l *histList, i int32, k int) {
	s := &h.slots[i]
	if s.prev[k] == none {
		l.head = s.next[k]
	} else {
		h.slots[s.prev[k]].next[k] = s.next[k]
	}
	if s.next[k] == none {
		l.tail = s.prev[k]
	} else {
		h.slots[s.next[k]].prev[k] = s.prev[k]
	}
	l.n--
}

// add records e at time at, as the newest entry, and returns its slot.
func (h *historyIndex) add(e Entry, at time.Time) int32 {
	var i int32
	if n := len(h.free); n > 0 {
		i, h.free = h.free[n-1], h.free[:n-1]
		h.slots[i] = histSlot{e: e, at: at}
	} else {
		i = int32(len(h.slots))
		h.slots = append(h.slots, histSlot{e: e, at: at})
	}
	h.push(&h.all, i, inAll)
	fl, ok := h.byFP[e.Fingerprint]
	if !ok {
		fl = emptyList
	}
	h.push(&fl, i, inFP)
	h.byFP[e.Fingerprint] = fl
	h.push(&h.class[evictionRank(e)], i, inClass)
	return i
}

// remove drops the entry in slot i.
func (h *historyIndex) remove(i int32) {
	s := &h.slots[i]
	h.unlink(&h.all, i, inAll)
	fp := s.e.Fingerprint
	fl := h.byFP[fp]
	h.unlink(&fl, i, inFP)
	if fl.n == 0 {
		delete(h.byFP, fp)
	} else {
		h.byFP[fp] = fl
	}
	h.unlink(&h.class[evictionRank(s.e)], i, inClass)
	*s = histSlot{} // the strings go with it
	h.free = append(h.free, i)
}

// record applies the retention rules of [Ledger]: it drops the entries e
// makes redundant, records e, then evicts while there are too many.
func (h *historyIndex) record(e Entry, at time.Time) {
	fl := h.byFP[e.Fingerprint]
	if fl.n > 0 {
		for i := fl.tail; i != none; {
			prev := h.slots[i].prev[inFP]
			if redundant(h.slots[i].e, e) {
				h.remove(i)
			}
			i = prev
		}
	}
	newest := h.add(e, at)
	for h.all.n > preflight.MaxHistory {
		h.remove(h.victim(newest))
	}
}

// victim picks the entry to evict: the oldest of the least useful class,
// never the newest entry. There are at least two entries.
func (h *historyIndex) victim(newest int32) int32 {
	for _, l := range h.class {
		if l.head != none && l.head != newest {
			return l.head
		}
	}
	return h.all.head // not reached: the oldest entry is in some class
}

// entries returns the history, oldest recorded first: every entry, or
// those whose fingerprint is *fp.
func (h *historyIndex) entries(fp *string) []StoredEntry {
	l, k := h.all, inAll
	if fp != nil {
		l, k = h.byFP[*fp], inFP
		if l.n == 0 {
			return []StoredEntry{}
		}
	}
	out := make([]StoredEntry, 0, l.n)
	for i := l.head; i != none; i = h.slots[i].next[k] {
		s := &h.slots[i]
		out = append(out, StoredEntry{Entry: s.e, At: s.at})
	}
	return out
}
