package agent

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/agentpreflight/preflight"
)

// fakeClock is a clock the test moves by hand; it never moves on its own.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// history returns l's history, failing the test on a store error.
func history(t testing.TB, l *Ledger) []preflight.HistoryEntry {
	t.Helper()
	h, err := l.History(context.Background())
	if err != nil {
		t.Fatalf("History: %v", err)
	}
	return h
}

// spent returns what g spent, failing the test on a store error.
func spent(t testing.TB, g *Guard) json.Number {
	t.Helper()
	s, err := g.SpentUSD(context.Background())
	if err != nil {
		t.Fatalf("SpentUSD: %v", err)
	}
	return s
}
