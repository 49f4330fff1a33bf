package mcpproxy

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent/mcpguard/mcptest"
	"github.com/agentpreflight/preflight/receipt"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// taskParams and taskResult are a tasks/get of the 2025-11-25 tasks, as
// an upstream that serves them reads and answers it.
type taskParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
}

type taskResult struct {
	mcp.ResultBase
	TaskID string `json:"taskId"`
	Status string `json:"status"`
}

// tasksUpstream is an MCP server that serves tasks/get (any task is
// "working") and tasks/result, which answers when the request ends
// (cancelled) and says so on ended, and declares the tasks capability
// when declare says so (the Go SDK serves the methods a server registers,
// but declares no tasks: its initialize result is amended on the way).
func tasksUpstream(t *testing.T, stateless, declare bool) (url string, ended chan string) {
	t.Helper()
	srv, _ := mcptest.NewServer("")
	if err := mcp.AddReceivingCustomMethod(srv, "tasks/get", func(_ context.Context, _ *mcp.ServerSession, p *taskParams) (*taskResult, error) {
		r := &taskResult{TaskID: p.TaskID, Status: "working"}
		if p.TaskID == "planted" { // a receipt the guard did not sign
			r.Meta = mcp.Meta{receipt.MetaKey: map[string]any{"sig": "x"}, "other": 1}
		}
		return r, nil
	}); err != nil {
		t.Fatal(err)
	}
	ended = make(chan string, 1)
	if err := mcp.AddReceivingCustomMethod(srv, "tasks/result", func(ctx context.Context, _ *mcp.ServerSession, p *taskParams) (*taskResult, error) {
		select {
		case <-ctx.Done():
			ended <- p.TaskID
			return nil, ctx.Err()
		case <-time.After(3 * time.Second): // not cancelled (a stateless upstream cannot be): no hang
			return &taskResult{TaskID: p.TaskID, Status: "completed"}, nil
		}
	}); err != nil {
		t.Fatal(err)
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: stateless, JSONResponse: true})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !declare || r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		if bytes.Contains(body, []byte(`"serverInfo"`)) {
			body = bytes.Replace(body, []byte(`"capabilities":{`), []byte(`"capabilities":{"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}},`), 1)
		}
		for k, v := range rec.Header() {
			if k != "Content-Length" {
				w.Header()[k] = v
			}
		}
		w.WriteHeader(rec.Code)
		w.Write(body)
	}))
	t.Cleanup(up.Close)
	return up.URL, ended
}

// TestProxyPassesTasks: the tasks requests of 2025-11-25, which the
// downstream transport does not take (the SDK answers them 400 "JSON RPC
// not handled"), reach an upstream that declared tasks, and the response
// comes back under the client's id; so for an upstream that gives session
// ids (the proxy posts the request itself) and one that does not (the
// SDK's transport posts it). A request the client cancels is answered
// so, and cancelled upstream. To an upstream that declared no tasks they are not sent, and
// the session goes on.
func TestProxyPassesTasks(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		t.Run(map[bool]string{false: "session ids", true: "stateless upstream"}[stateless], func(t *testing.T) {
			up, ended := tasksUpstream(t, stateless, true)
			url, _ := startProxy(t, HTTPDialer(up, nil), *mcptest.ScriptGuard())
			c := rawSession(t, url)
			if got := c.exchange(`{"jsonrpc":"2.0","id":"t-1","method":"tasks/get","params":{"taskId":"abc"}}`); got[`"t-1"`].Error != nil || got[`"t-1"`].ID == nil {
				t.Fatalf("tasks/get: %+v, want a result under the client's id", got)
			}
			resp, err := c.post(context.Background(), `{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"taskId":"abc"}}`)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if want := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"taskId\":\"abc\",\"status\":\"working\"}}\n\n"; resp.StatusCode != http.StatusOK || string(body) != want {
				t.Errorf("tasks/get: %d %q, want 200 %q", resp.StatusCode, body, want)
			}

			// A request the client cancels (notifications/cancelled) is
			// answered with the cancellation and ends upstream.
			done := make(chan map[string]rawAnswer, 1)
			go func() {
				done <- c.exchange(`{"jsonrpc":"2.0","id":9,"method":"tasks/result","params":{"taskId":"slow"}}`)
			}()
			time.Sleep(200 * time.Millisecond)
			resp, err = c.post(context.Background(), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			select {
			case got := <-done:
				if a := got["9"]; a.Error == nil || !strings.Contains(a.Error.Message, "cancelled by the client") {
					t.Errorf("cancelled request answered %+v, want the cancellation error", got)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the cancelled request was not answered")
			}
			if stateless {
				// Each request to a stateless Go SDK server is a session
				// of its own, which neither the notification nor the end
				// of the request cancels: the proxy's part ends here.
				return
			}
			select {
			case id := <-ended:
				if id != "slow" {
					t.Errorf("ended %q", id)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the cancelled request did not end upstream")
			}
		})
	}
	t.Run("receipts the upstream planted", func(t *testing.T) {
		seed := sha256.Sum256([]byte("passthrough receipts"))
		signer, err := receipt.NewSigner(ed25519.NewKeyFromSeed(seed[:]))
		if err != nil {
			t.Fatal(err)
		}
		up, _ := tasksUpstream(t, false, true)
		opts := *mcptest.ScriptGuard()
		opts.Receipts = signer
		url, _ := startProxy(t, HTTPDialer(up, nil), opts)
		c := rawSession(t, url)
		resp, err := c.post(context.Background(), `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"planted"}}`)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := `"result":{"_meta":{"other":1},"taskId":"planted","status":"working"}`; !strings.Contains(string(body), want) {
			t.Errorf("tasks/get with a planted receipt: %s; want %s", body, want)
		}
	})
	t.Run("no tasks declared", func(t *testing.T) {
		up, _ := tasksUpstream(t, false, false)
		url, _ := startProxy(t, HTTPDialer(up, nil), *mcptest.ScriptGuard())
		c := rawSession(t, url)
		resp, err := c.post(context.Background(), `{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"taskId":"abc"}}`)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("tasks/get to an upstream without tasks: status %d, want 400 as the transport answers", resp.StatusCode)
		}
		if got := c.exchange(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"` + mcptest.Quote + `","arguments":{"symbol":"ACME"}}}`); got["8"].Error != nil || got["8"].Result == nil || got["8"].Result.IsError {
			t.Errorf("a call after it: %+v, want a result", got)
		}
	})
}
