package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/agentpreflight/preflight/agent/mcpguard"
)

// memClaims is a CallClaims in one process's memory, for the example: a
// fleet of processes keeps its claims in a store they share (the proxy's
// --store keeps them in Redis or PostgreSQL).
type memClaims struct {
	mu     sync.Mutex
	n      int
	claims map[string]mcpguard.Claim // by digest; Token set while running
	until  map[string]time.Time
	parked map[string][]byte // calls awaiting input, by key (kept until taken, in this example)
}

func (m *memClaims) Claim(_ context.Context, digest string, hold time.Duration) (mcpguard.Claim, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.claims[digest]; ok && time.Now().Before(m.until[digest]) {
		if c.Token != "" {
			return mcpguard.Claim{Running: true}, nil
		}
		return c, nil
	}
	m.n++
	token := strconv.Itoa(m.n)
	m.claims[digest], m.until[digest] = mcpguard.Claim{Token: token}, time.Now().Add(hold)
	return mcpguard.Claim{Token: token}, nil
}

func (m *memClaims) Release(_ context.Context, digest, token string, result []byte, unknown bool, window time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.claims[digest].Token != token {
		return nil // not the caller's claim any more
	}
	if window <= 0 || (result == nil && !unknown) {
		delete(m.claims, digest)
		return nil
	}
	m.claims[digest], m.until[digest] = mcpguard.Claim{Result: result, Unknown: unknown}, time.Now().Add(window)
	return nil
}

func (m *memClaims) Park(_ context.Context, key string, state []byte, _ time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.parked == nil {
		m.parked = make(map[string][]byte)
	}
	m.parked[key] = state
	return nil
}

func (m *memClaims) Take(_ context.Context, key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.parked[key]
	delete(m.parked, key)
	return b, nil
}

// Two guards of one run (two replicas of a proxy) share their call
// claims: a call repeated through the second, with a new JSON-RPC id, gets
// the first one's result instead of running again.
func ExampleCallClaims() {
	claims := &memClaims{claims: map[string]mcpguard.Claim{}, until: map[string]time.Time{}}
	list := json.RawMessage(`{"tools":[{"name":"send_invoice","inputSchema":{"type":"object"}}]}`)
	var replicas []*mcpguard.Session
	for range 2 {
		s, err := mcpguard.NewSession(&mcpguard.Options{Claims: claims})
		if err != nil {
			panic(err)
		}
		defer s.Close()
		s.SawToolsList("", list)
		replicas = append(replicas, s)
	}
	sent := 0
	send := func(context.Context) (json.RawMessage, error) {
		sent++
		return json.RawMessage(`{"content":[{"type":"text","text":"invoice 7 sent (` + strconv.Itoa(sent) + `)"}]}`), nil
	}
	params := json.RawMessage(`{"name":"send_invoice","arguments":{"invoice":7}}`)
	for _, s := range replicas {
		res, err := s.CallTool(context.Background(), params, send)
		fmt.Println(string(res), err)
	}
	fmt.Println("sent:", sent)
	// Output:
	// {"content":[{"type":"text","text":"invoice 7 sent (1)"}]} <nil>
	// {"content":[{"type":"text","text":"invoice 7 sent (1)"}]} <nil>
	// sent: 1
}
