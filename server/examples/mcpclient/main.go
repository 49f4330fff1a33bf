// Command mcpclient calls both tools of a running preflight server over MCP,
// with the official MCP Go SDK client, and prints what they answer.
//
//	go run ./server/cmd/preflightd --addr 127.0.0.1:8080 &
//	go run ./server/examples/mcpclient -url http://127.0.0.1:8080/mcp
//
// It lists the tools, asks check_request to validate an order body that is
// missing a required field, and asks preflight_tool_call whether a web search
// is worth making. Neither call executes or fetches anything. The program
// exits non-zero if the server cannot be reached or a tool reports an input
// error.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	os.Exit(cmd(os.Args[1:], os.Stdout, os.Stderr))
}

// The usage line and what -h prints under it.
const (
	usage   = "usage: mcpclient [-url URL] [-protocol VERSION] [-timeout DURATION]"
	summary = "Calls both tools of a running preflight server over MCP with the official Go SDK client\n" +
		"and prints what they answer."
)

// cmd runs mcpclient with args and returns its exit status: 0 on success
// and for -h or --help (the usage goes to stdout), 2 for a mistake on the
// command line (the error and the usage line go to stderr), 1 for any other
// failure.
func cmd(args []string, stdout, stderr io.Writer) int {
	err := run(context.Background(), args, stdout)
	var ue usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "mcpclient: %v\n%s\nRun 'mcpclient -h' for the flags.\n", err, usage)
		return 2
	default:
		fmt.Fprintf(stderr, "mcpclient: %v\n", err)
		return 1
	}
}

// usageError is a mistake on the command line.
type usageError struct{ error }

// parseFlags parses args into fs. On -h or --help it prints the usage to
// stdout and returns flag.ErrHelp; a bad flag or a stray argument is a
// usageError. fs itself prints nothing.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintf(stdout, "%s\n\n%s\n\nflags:\n", usage, summary)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return err
	case err != nil:
		return usageError{err}
	case fs.NArg() > 0:
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	return nil
}

// The arguments sent to each tool: the same objects the HTTP routes take as
// their bodies.
const (
	checkArgs = `{
  "request": {
    "method": "POST",
    "url": "https://api.example.com/v1/orders",
    "body": {"qty": 2}
  },
  "schema": {
    "type": "object",
    "required": ["sku", "qty"],
    "properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}}
  },
  "economics": {"downstreamCostUsd": 0.05, "billsOnInvalidRequest": true, "retryCostUsd": 0.01}
}`
	toolCallArgs = `{
  "runId": "run-1",
  "stepId": "step-1",
  "tool": {
    "provider": "search",
    "operation": "web_search",
    "request": {"query": "model context protocol streamable http", "max_results": 5},
    "estimatedExternalCostUsd": 0.01
  },
  "budget": {"remainingUsd": 1.00}
}`
)

// run connects to the server named by -url, lists its tools and calls both.
func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("mcpclient", flag.ContinueOnError)
	url := fs.String("url", "http://127.0.0.1:8080/mcp", "the server's MCP endpoint")
	protocol := fs.String("protocol", "2025-11-25", `MCP protocol version to request; "" lets the SDK choose`)
	timeout := fs.Duration("timeout", 10*time.Second, "give up after this long")
	if err := parseFlags(fs, args, out); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	client := mcp.NewClient(&mcp.Implementation{Name: "preflight-mcpclient-example", Version: "0.3.0"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: *url},
		&mcp.ClientSessionOptions{ProtocolVersion: *protocol})
	if err != nil {
		return fmt.Errorf("connect to %s: %w", *url, err)
	}
	defer cs.Close()
	init := cs.InitializeResult()
	fmt.Fprintf(out, "connected to %s %s, protocol %s\n", init.ServerInfo.Name, init.ServerInfo.Version, init.ProtocolVersion)

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	for _, t := range tools.Tools {
		fmt.Fprintf(out, "tool %s: %s\n", t.Name, t.Title)
	}

	var failed error
	for _, call := range []struct{ name, args string }{
		{"check_request", checkArgs},
		{"preflight_tool_call", toolCallArgs},
	} {
		// json.RawMessage sends the arguments exactly as written.
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: call.name, Arguments: json.RawMessage(call.args)})
		if err != nil {
			return fmt.Errorf("tools/call %s: %w", call.name, err)
		}
		fmt.Fprintf(out, "\n%s (isError %v):\n", call.name, res.IsError)
		for _, c := range res.Content {
			if text, ok := c.(*mcp.TextContent); ok {
				var pretty bytes.Buffer
				if json.Indent(&pretty, []byte(text.Text), "", "  ") != nil {
					pretty.WriteString(text.Text)
				}
				fmt.Fprintln(out, pretty.String())
			}
		}
		if res.IsError {
			failed = errors.Join(failed, fmt.Errorf("%s reported an input error", call.name))
		}
	}
	return failed
}
