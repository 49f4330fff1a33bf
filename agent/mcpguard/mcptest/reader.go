package mcptest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Reading is what an MCP server made of the params of one tools/call: the
// tool name and arguments its handler was given, or Refused when it
// answered with a JSON-RPC error instead (then Error holds the message).
type Reading struct {
	Refused bool   // the server answered with a JSON-RPC error
	Error   string // that error's message
	Name    string // the tool name the handler was given
	// Arguments are the arguments the handler saw, as JSON; nil when the
	// params had none.
	Arguments json.RawMessage
}

// ParamsReader asks a real MCP server how it reads tools/call params. It
// speaks newline-delimited JSON-RPC (MCP's stdio transport) to a server
// whose tools/call handler answers, whatever the tool name, with one text
// block holding {"name": …, "arguments": …} as it received them. It is
// safe for concurrent use; calls are sent one at a time.
type ParamsReader struct {
	mu   sync.Mutex
	w    io.Writer
	r    *bufio.Reader
	next int
}

// NewParamsReader takes the server's standard input w and standard
// output r, and makes the initialize handshake.
func NewParamsReader(w io.Writer, r io.Reader) (*ParamsReader, error) {
	p := &ParamsReader{w: w, r: bufio.NewReaderSize(r, 1<<16)}
	if _, err := p.roundTrip(`"initialize"`, `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"params-reader","version":"1"}}`); err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if _, err := fmt.Fprintln(w, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		return nil, err
	}
	return p, nil
}

// Read sends params, which must be valid JSON, as the params of a
// tools/call and returns what the server made of them. Whitespace is
// compacted first (a line holds one message), as any re-encoding proxy
// does; nothing else of the bytes changes.
func (p *ParamsReader) Read(params []byte) (Reading, error) {
	var line bytes.Buffer
	if err := json.Compact(&line, params); err != nil {
		return Reading{}, fmt.Errorf("params are not JSON: %w", err)
	}
	resp, err := p.roundTrip(`"tools/call"`, line.String())
	if err != nil {
		return Reading{}, err
	}
	if resp.Error != nil {
		return Reading{Refused: true, Error: resp.Error.Message}, nil
	}
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(resp.Result, &res); err != nil || len(res.Content) != 1 {
		return Reading{}, fmt.Errorf("unexpected tools/call result %s", resp.Result)
	}
	var echo struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal([]byte(res.Content[0].Text), &echo); err != nil {
		return Reading{}, fmt.Errorf("unexpected echo %q: %v", res.Content[0].Text, err)
	}
	return Reading{Name: echo.Name, Arguments: echo.Arguments}, nil
}

type rpcResponse struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// roundTrip sends one request and reads lines until its response.
func (p *ParamsReader) roundTrip(method, params string) (rpcResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next++
	id := strconv.Itoa(p.next)
	if _, err := fmt.Fprintf(p.w, `{"jsonrpc":"2.0","id":%s,"method":%s,"params":%s}`+"\n", id, method, params); err != nil {
		return rpcResponse{}, err
	}
	for {
		line, err := p.r.ReadBytes('\n')
		if err != nil {
			return rpcResponse{}, fmt.Errorf("reading the server's answer: %w", err)
		}
		var resp rpcResponse
		if json.Unmarshal(line, &resp) != nil || string(resp.ID) != id {
			continue // a notification, a log line or a late answer
		}
		return resp, nil
	}
}

// GoSDKParamsReader starts a go-sdk server in this process, on a pipe,
// whose receiving middleware echoes every tools/call's params as the SDK
// decoded them. stop ends it.
func GoSDKParamsReader() (r *ParamsReader, stop func(), err error) {
	s := mcp.NewServer(&mcp.Implementation{Name: "params-echo", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("unreachable: the middleware answers every call")
		})
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			p, ok := req.GetParams().(*mcp.CallToolParamsRaw)
			if method != "tools/call" || !ok {
				return next(ctx, method, req)
			}
			echo, err := json.Marshal(struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments,omitempty"`
			}{p.Name, p.Arguments})
			if err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(echo)}}}, nil
		}
	})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx, &mcp.IOTransport{Reader: inR, Writer: outW})
	}()
	stop = func() {
		cancel()
		inW.Close()
		outR.Close()
		<-done
	}
	r, err = NewParamsReader(inW, outR)
	if err != nil {
		stop()
		return nil, nil, err
	}
	return r, stop, nil
}
