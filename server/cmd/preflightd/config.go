package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"

	"github.com/agentpreflight/preflight/server"
	"github.com/agentpreflight/preflight/server/internal/cli"
)

// options are the parsed command-line flags.
type options struct {
	addr              string
	baseURL, siteURL  string
	payTo, network    string
	facilitatorURL    string
	maxTimeoutSeconds int
	mcpTrustProxyHost bool
	operations        string     // catalog file; empty means the built-in operations
	signingKey        string     // receipt signing key file; empty means no receipts
	ops               opsOptions // timeouts and the metrics listener (opsflags.go)
}

// command is preflightd's usage.
var command = cli.Command{
	Name:     "preflightd",
	Synopsis: "[flags]",
	Summary: "Runs the preflight reference server: the HTTP API, /mcp, /docs and /openapi.json on one\n" +
		"address. Every flag has an environment fallback (shown in parentheses); a flag wins,\n" +
		"and a variable set to the empty string counts as unset.\n\n" +
		"preflightd proxy runs the guarding MCP proxy instead, in front of an MCP server;\n" +
		"'preflightd proxy -h' prints its flags.",
}

// parseFlags parses args, with environment variables (read through getenv)
// as defaults. -h and --help write the usage to stdout and return
// flag.ErrHelp; a bad flag or argument is a *cli.UsageError.
func parseFlags(args []string, getenv func(string) string, stdout io.Writer) (options, error) {
	fs := flag.NewFlagSet("preflightd", flag.ContinueOnError)
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	var o options
	fs.StringVar(&o.addr, "addr", env("PREFLIGHT_ADDR", "127.0.0.1:8080"), "listen `address` (env PREFLIGHT_ADDR); port 0 picks a free port")
	fs.StringVar(&o.baseURL, "base-url", env("PREFLIGHT_BASE_URL", ""), "public API base `URL` (env PREFLIGHT_BASE_URL); empty derives it from each request's Host")
	fs.StringVar(&o.siteURL, "site-url", env("PREFLIGHT_SITE_URL", ""), "public site base `URL` (env PREFLIGHT_SITE_URL); empty means the base URL")
	fs.StringVar(&o.payTo, "pay-to", env("PREFLIGHT_PAY_TO", ""), "x402 recipient `address` (env PREFLIGHT_PAY_TO); empty serves the tool-call route unpaid")
	fs.StringVar(&o.network, "network", env("PREFLIGHT_NETWORK", ""), "x402 `network` (env PREFLIGHT_NETWORK): eip155:8453 (default) or eip155:84532")
	fs.StringVar(&o.facilitatorURL, "facilitator-url", env("PREFLIGHT_FACILITATOR_URL", ""), "x402 facilitator base `URL` (env PREFLIGHT_FACILITATOR_URL); required with --pay-to")
	maxTimeout := env("PREFLIGHT_MAX_TIMEOUT_SECONDS", "0")
	trust := env("PREFLIGHT_MCP_TRUST_PROXY_HOST", "false")
	fs.IntVar(&o.maxTimeoutSeconds, "max-timeout-seconds", 0, "x402 authorization window in `seconds` (env PREFLIGHT_MAX_TIMEOUT_SECONDS); 0 means 60")
	fs.BoolVar(&o.mcpTrustProxyHost, "mcp-trust-proxy-host", false, "accept a non-loopback Host header on /mcp, as behind a reverse proxy (env PREFLIGHT_MCP_TRUST_PROXY_HOST)")
	fs.StringVar(&o.operations, "operations", env("PREFLIGHT_OPERATIONS", ""), "catalog `file` of the operations to decide, a regular file of at most 4 MiB (env PREFLIGHT_OPERATIONS); empty means search/web_search and browse/fetch only")
	fs.StringVar(&o.signingKey, "signing-key", env("PREFLIGHT_SIGNING_KEY", ""), "receipt signing key `file` (env PREFLIGHT_SIGNING_KEY): PEM, an Ed25519 PRIVATE KEY (PKCS#8) first, earlier keys after it; empty signs nothing")
	if err := o.ops.register(fs, getenv); err != nil {
		return o, err
	}
	var err error
	if o.maxTimeoutSeconds, err = strconv.Atoi(maxTimeout); err != nil {
		return o, fmt.Errorf("PREFLIGHT_MAX_TIMEOUT_SECONDS=%q is not an integer", maxTimeout)
	}
	if o.mcpTrustProxyHost, err = strconv.ParseBool(trust); err != nil {
		return o, fmt.Errorf("PREFLIGHT_MCP_TRUST_PROXY_HOST=%q is not a boolean", trust)
	}
	if err := command.Parse(fs, args, stdout); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, command.Usagef("unexpected arguments %q", fs.Args())
	}
	if o.addr == "" { // only an explicit --addr "": an empty PREFLIGHT_ADDR keeps the default
		return o, command.Usagef("--addr is empty; want a listen address such as 127.0.0.1:8080 (port 0 picks a free port)")
	}
	return o, nil
}

// serverConfig validates o and turns it into the handler's configuration.
func (o options) serverConfig() (server.Config, error) {
	cfg := server.Config{MCPTrustProxyHost: o.mcpTrustProxyHost}
	if err := o.ops.validate(o.payTo != "", o.addr); err != nil {
		return cfg, err
	}
	var err error
	if cfg.BaseURL, err = checkBaseURL("--base-url", o.baseURL); err != nil {
		return cfg, err
	}
	if cfg.SiteURL, err = checkBaseURL("--site-url", o.siteURL); err != nil {
		return cfg, err
	}
	if cfg.Catalog, err = loadCatalog(o.operations); err != nil {
		return cfg, err
	}
	if cfg.Receipts, err = loadSigningKey("--signing-key", o.signingKey); err != nil {
		return cfg, err
	}
	if o.payTo == "" {
		if o.network != "" || o.facilitatorURL != "" || o.maxTimeoutSeconds != 0 {
			return cfg, errors.New("payment flags (--network, --facilitator-url, --max-timeout-seconds) are set but --pay-to is empty; set --pay-to to charge for the tool-call route, or drop them to serve it unpaid")
		}
		return cfg, nil
	}
	pc := &server.Payment{
		PayTo:               o.payTo,
		Network:             o.network,
		FacilitatorURL:      o.facilitatorURL,
		MaxTimeoutSeconds:   o.maxTimeoutSeconds,
		VerifyTimeout:       o.ops.verifyTimeout,
		SettleTimeout:       o.ops.settleTimeout,
		MaxFacilitatorCalls: o.ops.maxFacilitatorCalls,
	}
	if err := pc.Validate(); err != nil {
		return cfg, fmt.Errorf("invalid payment configuration: %w", err)
	}
	cfg.Payment = pc
	return cfg, nil
}

// checkBaseURL accepts "" or an absolute http(s) URL with a host and no
// query or fragment, and removes a trailing slash.
func checkBaseURL(flagName, s string) (string, error) {
	if s == "" {
		return "", nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("%s %q must be an absolute http(s) URL with a host and no query, fragment or user info, such as https://api.example.com", flagName, s)
	}
	return strings.TrimRight(s, "/"), nil
}
