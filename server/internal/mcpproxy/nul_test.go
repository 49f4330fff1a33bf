package mcpproxy

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent/mcpguard/mcptest"
)

// TestCallWithControlCharacters checks that a call whose arguments hold
// a control character escaped in JSON (here U+0000) is answered through
// the proxy, on the direct path and through the downstream transport.
func TestCallWithControlCharacters(t *testing.T) {
	up, _ := httpUpstream(t)
	url, _ := startProxy(t, HTTPDialer(up, nil), *mcptest.ScriptGuard())
	for _, args := range []string{`{"symbol":"A\u0000B"}`, `{"symbol":"\u0041\u0001"}`} {
		rc := rawSession(t, url)
		postRaw(t, rc, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		resp, err := rc.post(ctx, callBody(`7`, mcptest.Quote, args))
		if err != nil {
			cancel()
			t.Fatalf("%s: %v", args, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		if err != nil || resp.StatusCode != 200 || !strings.Contains(string(b), `101.25`) {
			t.Errorf("%s: %d %s %v; want the quote", args, resp.StatusCode, b, err)
		}
	}
}
