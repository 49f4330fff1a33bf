package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// mcpBatch returns a JSON-RPC batch of n tools/list calls: the amplification
// of issue 21 (1,300 calls in 63,891 bytes returned 25.5 MB).
func mcpBatch(n int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, i)
	}
	b.WriteByte(']')
	return b.String()
}

// TestMCPBatchRefused sends batches with every protocol version header a
// client may send (none included, which the SDK treats as a version that
// still allows batches): each gets one small JSON-RPC error, never the
// batch's answers.
func TestMCPBatchRefused(t *testing.T) {
	ts := mcpTestServer(t, Config{})
	big := mcpBatch(1300)
	if len(big) > MaxBodyBytes {
		t.Fatalf("batch is %d bytes, over the body limit", len(big))
	}
	bodies := map[string]string{
		"1300 tools/list": big,
		"one call":        `[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`,
		"leading space":   "  \n[" + `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}]`,
		"empty array":     `[]`,
	}
	for _, version := range []string{"", "2025-03-26", "2025-06-18", "2025-11-25"} {
		for name, body := range bodies {
			t.Run(name+" version "+version, func(t *testing.T) {
				h := http.Header{"Mcp-Protocol-Version": nil}
				if version != "" {
					h["Mcp-Protocol-Version"] = []string{version}
				}
				status, hdr, got := mcpPost(t, ts, h, body)
				if status != http.StatusBadRequest {
					t.Fatalf("status %d, want 400; %d bytes of body", status, len(got))
				}
				if ct := hdr.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type %q", ct)
				}
				var msg struct {
					JSONRPC string `json:"jsonrpc"`
					Error   struct {
						Code int `json:"code"`
					} `json:"error"`
				}
				var members map[string]json.RawMessage
				if err := json.Unmarshal(got, &members); err != nil {
					t.Fatalf("not one JSON-RPC message (%v): %.200s", err, got)
				}
				json.Unmarshal(got, &msg)
				want := struct {
					JSONRPC string
					ID      string
					Code    int
				}{"2.0", "null", -32600}
				id := "absent"
				if raw, ok := members["id"]; ok {
					id = string(raw)
				}
				if diff := cmp.Diff(want, struct {
					JSONRPC string
					ID      string
					Code    int
				}{msg.JSONRPC, id, msg.Error.Code}); diff != "" {
					t.Errorf("answer (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestMCPResponseBounded puts a transport that answers more than
// MaxMCPResponseBytes behind the /mcp wrapper: the client gets a JSON-RPC
// error for its id, not the oversized answer.
func TestMCPResponseBounded(t *testing.T) {
	huge := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		chunk := []byte(strings.Repeat("x", 64<<10))
		for range 40 { // 2.5 MiB
			w.Write(chunk)
		}
	})
	ts := httptest.NewServer(&mcpHandler{sdk: huge})
	defer ts.Close()
	req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":"abc","method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var msg struct {
		ID    json.RawMessage `json:"id"`
		Error struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || string(msg.ID) != `"abc"` || msg.Error.Code != -32603 {
		t.Errorf("status %d, id %s, code %d; want 200, \"abc\", -32603", resp.StatusCode, msg.ID, msg.Error.Code)
	}
}
