package agent

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/google/go-cmp/cmp"
)

// scanHistory is the history as the in-memory store kept it before the
// index: one slice, scanned whole for each read, drop and eviction. It is
// the reference the index is checked against.
type scanHistory struct {
	entries []Entry
	at      []time.Time
}

func (m *scanHistory) record(e Entry, at time.Time) {
	for i := len(m.entries) - 1; i >= 0; i-- {
		if redundant(m.entries[i], e) {
			m.remove(i)
		}
	}
	m.entries = append(m.entries, e)
	m.at = append(m.at, at)
	for len(m.entries) > preflight.MaxHistory {
		best := 0
		for i := 1; i < len(m.entries)-1; i++ {
			if evictionRank(m.entries[i]) < evictionRank(m.entries[best]) {
				best = i
			}
		}
		m.remove(best)
	}
}

func (m *scanHistory) remove(i int) {
	m.entries = append(m.entries[:i], m.entries[i+1:]...)
	m.at = append(m.at[:i], m.at[i+1:]...)
}

func (m *scanHistory) stored(fp *string) []StoredEntry {
	h := []StoredEntry{}
	for i, e := range m.entries {
		if fp == nil || e.Fingerprint == *fp {
			h = append(h, StoredEntry{Entry: e, At: m.at[i]})
		}
	}
	return h
}

// indexFingerprints are the fingerprints of the proposals indexProposal
// makes, so that random histories hold entries Decide matches.
var indexFingerprints = func() []string {
	out := make([]string, 4)
	for i := range out {
		req := indexProposal(i, 0)
		d, err := preflight.Decide(&req)
		if err != nil {
			panic(err)
		}
		out[i] = d.RequestFingerprint
	}
	return out
}()

// indexProposal is proposal i (one of four distinct calls) with the
// options that flags picks: reuse permitted or not, a TTL, a retry cap and
// a goal hash.
func indexProposal(i int, flags byte) preflight.ToolCallRequest {
	req := searchReq(fmt.Sprint("query ", i), "0.01")
	req.Budget.RemainingUSD = "1000"
	req.Capabilities.CanReusePriorResult = flags&1 == 0
	req.FreshnessTTLSeconds = []json.Number{"60", "5", "0.5", ""}[flags>>1&3]
	req.RetryCap = []json.Number{"", "1", "2", "3"}[flags>>3&3]
	req.Task.GoalHash = []string{"g1", "g2", ""}[int(flags>>5&3)%3]
	return req
}

// replayIndex records the entries data describes into both the index and
// the scan, checking after each that they hold the same history, and
// that every fingerprint's entries are the scan's filtered.
func replayIndex(t *testing.T, data []byte) (*historyIndex, *scanHistory, time.Time) {
	idx, scan := newHistoryIndex(), &scanHistory{}
	now := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	for n := 0; len(data) >= 3; n++ {
		a, b, c := data[0], data[1], data[2]
		data = data[3:]
		// Fingerprints: mostly the four proposals', else one of 150 others
		// (enough to fill the history and evict).
		var fp string
		if a&1 == 0 {
			fp = indexFingerprints[a>>1&3]
		} else {
			fp = fmt.Sprintf("%064x", int(a>>1)+int(b&1)<<7)
		}
		e := Entry{
			ToolCallID:  fmt.Sprint("call-", n),
			Fingerprint: fp,
			Outcome:     []preflight.Outcome{preflight.OutcomeSuccess, preflight.OutcomeTerminalFailure, preflight.OutcomeTransientFailure, preflight.OutcomeSuccess}[b>>1&3],
			GoalHash:    []string{"g1", "g2", "", "g1"}[b>>3&3],
		}
		if b&0x20 == 0 {
			e.ResultReference = fmt.Sprint("ref-", n)
		}
		// Equal times (same millisecond) happen: Decide breaks the tie by
		// order.
		now = now.Add(time.Duration(c) * 37 * time.Millisecond)
		idx.record(e, now)
		scan.record(e, now)
		if want, got := scan.stored(nil), idx.entries(nil); !sameStored(want, got) {
			diff := cmp.Diff(want, got)
			t.Fatalf("after entry %d (%+v), the history (-scan +index):\n%s", n, e, diff)
		}
		if idx.len() != len(scan.entries) {
			t.Fatalf("after entry %d: len %d, scan holds %d", n, idx.len(), len(scan.entries))
		}
		for _, f := range append(indexFingerprints[:len(indexFingerprints):len(indexFingerprints)], fp) {
			if want, got := scan.stored(&f), idx.entries(&f); !sameStored(want, got) {
				diff := cmp.Diff(want, got)
				t.Fatalf("after entry %d, the entries of %s (-scan +index):\n%s", n, f, diff)
			}
		}
	}
	return &idx, scan, now
}

func sameStored(a, b []StoredEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Entry != b[i].Entry || !a[i].At.Equal(b[i].At) {
			return false
		}
	}
	return true
}

// checkIndexedDecisions decides every proposal on the whole history (as
// a caller that sends Ledger.History does) and on the entries of its
// fingerprint alone (as a Guard does): the answers must be the same
// bytes. It returns the first reason code of each decision, counted.
func checkIndexedDecisions(t *testing.T, idx *historyIndex, scan *scanHistory, now time.Time, flags []byte) map[preflight.ReasonCode]int {
	seen := map[preflight.ReasonCode]int{}
	for _, f := range flags {
		for i, fp := range indexFingerprints {
			whole := indexProposal(i, f)
			whole.History = historyOf(LedgerState{History: scan.stored(nil), Now: now})
			indexed := indexProposal(i, f)
			indexed.History = historyOf(LedgerState{History: idx.entries(&fp), Now: now})
			dw, ew := preflight.Decide(&whole)
			di, ei := preflight.Decide(&indexed)
			bw, _ := json.Marshal(dw)
			bi, _ := json.Marshal(di)
			if string(bw) != string(bi) || fmt.Sprint(ew) != fmt.Sprint(ei) {
				t.Fatalf("proposal %d, flags %#x: on the whole history %s %v; on its fingerprint's entries %s %v", i, f, bw, ew, bi, ei)
			}
			if dw != nil {
				seen[dw.ReasonCodes[0]]++
			}
		}
	}
	return seen
}

// indexSeeds are histories worth replaying: one fingerprint's successes,
// failures and retries mixed with others, and floods that evict.
func indexSeeds() [][]byte {
	var seeds [][]byte
	mixed := []byte{0, 0, 1, 0, 2, 0, 0, 4, 0, 2, 0x20, 3, 0, 2, 0, 4, 6, 1, 1, 0, 9, 2, 2, 0, 0, 8, 200}
	seeds = append(seeds, mixed)
	flood := []byte{}
	for i := range 400 {
		flood = append(flood, byte(i*2+1), byte(i), byte(i%3))
		if i%7 == 0 {
			flood = append(flood, 0, byte(i), 1)
		}
	}
	seeds = append(seeds, flood)
	terminals := []byte{}
	for i := range 130 {
		terminals = append(terminals, 2, 2, 0, byte(i*2+1), byte(i), 0)
	}
	return append(seeds, terminals)
}

// allFlags are the options of indexProposal, every one.
var allFlags = func() []byte {
	out := make([]byte, 0, 96)
	for f := range 96 {
		out = append(out, byte(f))
	}
	return out
}()

// TestHistoryIndexMatchesScan checks the index against the scan it
// replaced on the seeds and on pseudo-random histories.
func TestHistoryIndexMatchesScan(t *testing.T) {
	cases := indexSeeds()
	x := uint32(2463534242)
	for range 8 {
		data := make([]byte, 3*300)
		for i := range data {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			data[i] = byte(x)
		}
		cases = append(cases, data)
	}
	seen := map[preflight.ReasonCode]int{}
	for n, data := range cases {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			idx, scan, now := replayIndex(t, data)
			for r, k := range checkIndexedDecisions(t, idx, scan, now, allFlags) {
				seen[r] += k
			}
		})
	}
	// The histories must reach every rule the history decides.
	for _, r := range []preflight.ReasonCode{preflight.ReasonReuseFreshResult, preflight.ReasonRetryCapReached, preflight.ReasonNoProvenWaste} {
		if seen[r] == 0 {
			t.Errorf("no decision was %s: %v", r, seen)
		}
	}
}

// FuzzHistoryIndex replays a history described by its input into the
// index and the scan, and decides the proposals on both.
func FuzzHistoryIndex(f *testing.F) {
	for _, s := range indexSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 3*250 { // past the bound of the history, more of the same
			data = data[:3*250]
		}
		idx, scan, now := replayIndex(t, data)
		flags := []byte{0, 0x08}
		if len(data) > 0 {
			flags = append(flags, data[len(data)-1])
		}
		checkIndexedDecisions(t, idx, scan, now, flags)
	})
}
