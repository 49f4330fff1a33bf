package mcpinterop

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/agentpreflight/preflight/agent/mcpguard/mcptest"
)

// TestParamsReadAsTypeScriptSDK: for every tools/call params of the
// corpus and every spelling of its members, the official TypeScript SDK's
// server (params_echo.mjs over stdio) reads the same tool and arguments as
// the guard, or the guard refuses the params, or the server does. The
// go-sdk's reading is compared in agent/mcpguard.
func TestParamsReadAsTypeScriptSDK(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		requirement(t, "node is not installed (%v); install Node.js 20 or newer, then run npm ci in server/interop/mcp", err)
	}
	if _, err := os.Stat(filepath.Join("node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		requirement(t, "server/interop/mcp/node_modules is missing (%v); run npm ci in server/interop/mcp", err)
	}
	cmd := exec.Command(node, "params_echo.mjs")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	r, err := mcptest.NewParamsReader(stdin, stdout)
	if err != nil {
		t.Fatal(err)
	}

	// The comparison has teeth: the TypeScript SDK runs the disguised call
	// the guard refuses, as the tool the guard did not judge.
	got, err := r.Read([]byte(`{"name":"priced_write","NAME":"read_count","arguments":{"q":"A","q":"B"}}`))
	if err != nil || got.Refused || got.Name != "priced_write" || string(got.Arguments) != `{"q":"B"}` {
		t.Fatalf("the TypeScript SDK read the disguised call as %+v, %v; want priced_write with {\"q\":\"B\"}", got, err)
	}

	variants := mcptest.ParamsVariants()
	read, refused := 0, 0
	for _, params := range variants {
		if msg := mcptest.CompareReading(mcpguard.ReadCallParams, r, params); msg != "" {
			t.Error(msg)
		}
		if _, _, err := mcpguard.ReadCallParams(params); err != nil {
			refused++
		} else {
			read++
		}
	}
	t.Logf("%d params: %d read alike by the guard and the TypeScript SDK, %d refused by the guard", len(variants), read, refused)
}
