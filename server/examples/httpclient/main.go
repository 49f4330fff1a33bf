// Command httpclient calls both routes of a running preflight server: it
// validates a request body with POST /check-request, then asks
// POST /v0.2/preflight/tool-call whether a web search is worth making.
//
//	go run ./server/examples/httpclient --base-url http://127.0.0.1:8080
//
// When the server charges for the tool-call route it answers 402 with an
// x402 challenge; this example prints the price and stops there (paying
// needs an x402-capable client that signs with your own wallet).
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/agentpreflight/preflight"
)

func main() {
	os.Exit(cmd(os.Args[1:], os.Stdout, os.Stderr))
}

// The usage line and what -h prints under it.
const (
	usage   = "usage: httpclient [--base-url URL]"
	summary = "Calls POST /check-request and POST /v0.2/preflight/tool-call on a running preflight\n" +
		"server and prints the answers."
)

// cmd runs httpclient with args and returns its exit status: 0 on success
// and for -h or --help (the usage goes to stdout), 2 for a mistake on the
// command line (the error and the usage line go to stderr), 1 for any other
// failure.
func cmd(args []string, stdout, stderr io.Writer) int {
	err := runArgs(args, stdout)
	var ue usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "httpclient: %v\n%s\nRun 'httpclient -h' for the flags.\n", err, usage)
		return 2
	default:
		fmt.Fprintf(stderr, "httpclient: %v\n", err)
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

// runArgs parses args and runs against the server they name, giving up
// after 30 seconds.
func runArgs(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("httpclient", flag.ContinueOnError)
	base := fs.String("base-url", "http://127.0.0.1:8080", "base `URL` of the preflight server")
	if err := parseFlags(fs, args, out); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return run(ctx, http.DefaultClient, *base, out)
}

// run makes the two calls against base and reports to out.
func run(ctx context.Context, client *http.Client, base string, out io.Writer) error {
	// 1. Validate an order body before sending it to a paid API.
	check := map[string]any{
		"request": map[string]any{
			"method": "POST",
			"url":    "https://api.example.com/v1/orders",
			"body":   map[string]any{"sku": "A-1", "qty": 0},
		},
		"schema": map[string]any{
			"type":     "object",
			"required": []string{"sku", "qty"},
			"properties": map[string]any{
				"sku": map[string]any{"type": "string"},
				"qty": map[string]any{"type": "integer", "minimum": 1},
			},
		},
	}
	var res preflight.CheckResult
	if _, err := post(ctx, client, base+"/check-request", check, &res); err != nil {
		return fmt.Errorf("check-request: %w", err)
	}
	fmt.Fprintf(out, "check-request: valid=%v\n", res.Valid)
	for _, e := range res.Errors {
		fmt.Fprintf(out, "  error %s at %s: %s\n", e.Code, e.Path, e.Message)
	}

	// 2. Ask whether a web search is worth making. Budget is what remains
	// after paying for this consultation.
	call := map[string]any{
		"runId":  "example-run",
		"stepId": "step-1",
		"tool": map[string]any{
			"provider":                 "search",
			"operation":                "web_search",
			"request":                  map[string]any{"query": "x402 payment protocol", "max_results": 5},
			"estimatedExternalCostUsd": 0.01,
		},
		"budget": map[string]any{"remainingUsd": 0.5},
	}
	var dec preflight.ToolCallDecision
	resp, err := post(ctx, client, base+"/v0.2/preflight/tool-call", call, &dec)
	var pay *paymentRequired
	if errors.As(err, &pay) {
		fmt.Fprintf(out, "tool-call: payment required (%s); use an x402 client to pay and retry\n", pay.summary)
		return nil
	}
	if err != nil {
		return fmt.Errorf("tool-call: %w", err)
	}
	fmt.Fprintf(out, "tool-call: decision=%s enforcement=%s reasons=%v\n", dec.Verdict, dec.Enforcement, dec.ReasonCodes)
	fmt.Fprintf(out, "  record fingerprint %s in your history after the call\n", dec.RequestFingerprint)
	if s := resp.Header.Get("PAYMENT-RESPONSE"); s != "" {
		fmt.Fprintln(out, "  settled: PAYMENT-RESPONSE present")
	}
	return nil
}

// paymentRequired is the 402 answer of a paid route.
type paymentRequired struct{ summary string }

func (p *paymentRequired) Error() string { return "payment required: " + p.summary }

// post sends v as JSON and decodes a 200 answer into into. A non-200 answer
// is returned as an error carrying the server's error envelope.
func post(ctx context.Context, client *http.Client, url string, v, into any) (*http.Response, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return resp, json.Unmarshal(data, into)
	case http.StatusPaymentRequired:
		return resp, &paymentRequired{summary: describeChallenge(resp.Header.Get("PAYMENT-REQUIRED"))}
	}
	var env struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if json.Unmarshal(data, &env) == nil && env.Error.Code != "" {
		return resp, fmt.Errorf("HTTP %d %s: %s", resp.StatusCode, env.Error.Code, env.Error.Message)
	}
	return resp, fmt.Errorf("HTTP %d", resp.StatusCode)
}

// describeChallenge summarizes a PAYMENT-REQUIRED header: amount, asset and
// network of each accepted way to pay.
func describeChallenge(header string) string {
	raw, err := base64.StdEncoding.DecodeString(header)
	if err != nil {
		return "unreadable challenge"
	}
	var c struct {
		Accepts []struct{ Amount, Asset, Network string } `json:"accepts"`
	}
	if json.Unmarshal(raw, &c) != nil || len(c.Accepts) == 0 {
		return "unreadable challenge"
	}
	a := c.Accepts[0]
	return fmt.Sprintf("%s atomic units of %s on %s", a.Amount, a.Asset, a.Network)
}
