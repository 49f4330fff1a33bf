package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"

	"github.com/agentpreflight/preflight/agent/mcpguard/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// authProxy is `preflightd proxy` run from the built binary, with every
// JSON log line kept.
type authProxy struct {
	cmd    *exec.Cmd
	addr   string
	mu     sync.Mutex
	lines  []map[string]any
	exited chan error
}

// startAuthProxy runs `bin proxy --listen 127.0.0.1:0 args...` with env
// added to a clean environment, and waits for its "listening" line.
func startAuthProxy(t *testing.T, bin string, env []string, args ...string) *authProxy {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"proxy", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &authProxy{cmd: cmd, exited: make(chan error, 1)}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				line = map[string]any{"msg": "(not JSON) " + sc.Text()}
			}
			d.mu.Lock()
			d.lines = append(d.lines, line)
			d.mu.Unlock()
			if line["msg"] == "listening" {
				addr <- line["addr"].(string)
			}
		}
		d.exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-d.exited
		}
	})
	select {
	case d.addr = <-addr:
	case err := <-d.exited:
		t.Fatalf("the proxy exited before listening: %v\n%s", err, d.dump())
	case <-time.After(60 * time.Second):
		t.Fatal("the proxy logged no address")
	}
	return d
}

// logged returns the log lines whose msg is msg.
func (d *authProxy) logged(msg string) []map[string]any {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []map[string]any
	for _, l := range d.lines {
		if l["msg"] == msg {
			out = append(out, l)
		}
	}
	return out
}

func (d *authProxy) dump() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var b strings.Builder
	for _, l := range d.lines {
		j, _ := json.Marshal(l)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

// proxyRefusal runs the binary with args and returns what it printed when
// it refused to start.
func proxyRefusal(t *testing.T, bin string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"proxy"}, args...)...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the proxy started and ended without error:\n%s", out)
	}
	return string(out)
}

// tokenUpstream serves the test tools over Streamable HTTP and, when token
// is not empty, demands Authorization: Bearer token, answering anything
// else with 401 and a challenge. It records the Authorization headers it
// got.
type tokenUpstream struct {
	srv    *httptest.Server
	counts *mcptest.Counters
	mu     sync.Mutex
	auths  []string
	extra  http.Header // other headers seen on the last request
}

const upstreamChallenge = `Bearer realm="upstream", error="invalid_token", resource_metadata="https://upstream.example/.well-known/oauth-protected-resource"`

func newTokenUpstream(t *testing.T, token string) *tokenUpstream {
	t.Helper()
	s, counts := mcptest.NewServer("")
	// A tool whose inputSchema the guard cannot use (a $ref to another
	// document, which is never fetched).
	s.AddTool(&mcp.Tool{Name: "lookup_order", Description: "Look up an order by id or email.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"$ref":"https://example.com/order-id.json"}}}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "shipped"}}}, nil
		})
	u := &tokenUpstream{counts: counts}
	// Stateless, the go-sdk serves both generations: sessions
	// (initialize) and the 2026-07-28 revision.
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.auths = append(u.auths, r.Header.Get("Authorization"))
		u.extra = r.Header.Clone()
		u.mu.Unlock()
		if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
			w.Header().Set("WWW-Authenticate", upstreamChallenge)
			http.Error(w, `{"error":"invalid_token"}`, http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *tokenUpstream) url() string { return u.srv.URL }

// authorizations returns the distinct Authorization headers the upstream got.
func (u *tokenUpstream) authorizations() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, a := range u.auths {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}

// bearer is a transport that sends Authorization: Bearer token.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// connectAs opens an MCP session through the proxy with token.
func connectAs(t *testing.T, addr, token string) (*mcp.ClientSession, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hc := &http.Client{Transport: bearer{token}}
	return mcp.NewClient(&mcp.Implementation{Name: "auth-test", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", HTTPClient: hc}, nil)
}

// jwtIssuer signs ES256 tokens and serves its key set.
type jwtIssuer struct {
	key  *ecdsa.PrivateKey
	jwks []byte
	srv  *httptest.Server
}

func newJWTIssuer(t *testing.T) *jwtIssuer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwk, err := jwkset.NewJWKFromKey(&key.PublicKey, jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: "k1", ALG: jwkset.AlgES256, USE: jwkset.UseSig}})
	if err != nil {
		t.Fatal(err)
	}
	set, err := json.Marshal(jwkset.JWKSMarshal{Keys: []jwkset.JWKMarshal{jwk.Marshal()}})
	if err != nil {
		t.Fatal(err)
	}
	i := &jwtIssuer{key: key, jwks: set}
	i.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(i.jwks)
	}))
	t.Cleanup(i.srv.Close)
	return i
}

const (
	testIssuer   = "https://id.example.test/"
	testAudience = "https://proxy.example.test/mcp"
)

// token signs claims (iss, aud and exp are added unless given).
func (i *jwtIssuer) token(t *testing.T, claims jwt.MapClaims) string {
	t.Helper()
	full := jwt.MapClaims{"iss": testIssuer, "aud": testAudience, "exp": time.Now().Add(time.Hour).Unix()}
	for k, v := range claims {
		full[k] = v
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, full)
	tok.Header["kid"] = "k1"
	s, err := tok.SignedString(i.key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// post sends a JSON-RPC body to the proxy with token, and returns the
// response with its body read.
func post(t *testing.T, addr, token, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`

// TestProxyInboundAuth runs the binary with a principals file that names
// one principal by API key and accepts JWTs from a local issuer, and
// checks who gets in, what a refused caller is told, and that one
// principal's session is not another's.
func TestProxyInboundAuth(t *testing.T) {
	bin := buildBinary(t)
	up := newTokenUpstream(t, "")
	iss := newJWTIssuer(t)
	const aliceKey = "pf_alice_3c1d2f"
	principals := writeFile(t, "principals.json", `{
  "jwt": {"issuer": "`+testIssuer+`", "audience": "`+testAudience+`", "jwks": "`+iss.srv.URL+`", "refresh": "1m"},
  "principals": {"alice": {"keySha256": ["`+sha256Hex(aliceKey)+`"]}}
}`)
	d := startAuthProxy(t, bin, nil, "--upstream", up.url(), "--principals", principals)

	t.Run("no credentials: 401 with a challenge naming the metadata", func(t *testing.T) {
		resp, body := post(t, d.addr, "", initializeBody)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("status %d, want 401: %s", resp.StatusCode, body)
		}
		want := `Bearer realm="preflight proxy", resource_metadata="http://` + d.addr + `/.well-known/oauth-protected-resource/mcp"`
		if got := resp.Header.Get("WWW-Authenticate"); got != want {
			t.Errorf("WWW-Authenticate\n got %s\nwant %s", got, want)
		}
		if !json.Valid([]byte(body)) || !strings.Contains(body, "no credentials") {
			t.Errorf("body %s: want a JSON-RPC error saying no credentials came", body)
		}
	})
	t.Run("the protected-resource metadata", func(t *testing.T) {
		resp, err := http.Get("http://" + d.addr + "/.well-known/oauth-protected-resource/mcp")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		got, _ := json.Marshal(m)
		want := `{"authorization_servers":["` + testIssuer + `"],"bearer_methods_supported":["header"],"resource":"http://` + d.addr + `/mcp","resource_name":"preflight MCP guarding proxy"}`
		if resp.StatusCode != 200 || string(got) != want {
			t.Errorf("status %d, metadata\n got %s\nwant %s", resp.StatusCode, got, want)
		}
	})
	for _, c := range []struct {
		name, token, why string
	}{
		{"an unknown API key", "pf_mallory", "the API key is not known"},
		{"a JWT for another audience", iss.token(t, jwt.MapClaims{"sub": "bob", "aud": "https://elsewhere.test/"}), "the JWT is not valid"},
		{"an expired JWT", iss.token(t, jwt.MapClaims{"sub": "bob", "exp": time.Now().Add(-time.Hour).Unix()}), "the JWT is not valid"},
		{"a JWT from another issuer", iss.token(t, jwt.MapClaims{"sub": "bob", "iss": "https://evil.test/"}), "the JWT is not valid"},
		{"a JWT without a subject", iss.token(t, jwt.MapClaims{}), "no string claim"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, body := post(t, d.addr, c.token, initializeBody)
			ch := resp.Header.Get("WWW-Authenticate")
			if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(ch, `error="invalid_token"`) || !strings.Contains(body, c.why) {
				t.Errorf("status %d, challenge %s, body %s: want 401, invalid_token, %q", resp.StatusCode, ch, body, c.why)
			}
		})
	}
	callQuote := func(t *testing.T, cs *mcp.ClientSession) {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: mcptest.Quote, Arguments: map[string]any{"symbol": "ACME"}})
		if err != nil || res.IsError {
			t.Fatalf("call: %v %+v", err, res)
		}
	}
	t.Run("an API key and a JWT each get in", func(t *testing.T) {
		before := up.counts.Get(mcptest.Quote)
		for _, token := range []string{aliceKey, iss.token(t, jwt.MapClaims{"sub": "bob"})} {
			cs, err := connectAs(t, d.addr, token)
			if err != nil {
				t.Fatal(err)
			}
			callQuote(t, cs)
			cs.Close()
		}
		// The same read-only call by two principals runs twice: one's
		// saved result is never the other's.
		if got := up.counts.Get(mcptest.Quote) - before; got != 2 {
			t.Errorf("the upstream ran %d quotes, want 2", got)
		}
		// The client's credentials stay at the proxy by default.
		for _, a := range up.authorizations() {
			if a != "" {
				t.Errorf("the upstream got Authorization %q; want none without forwarding", a)
			}
		}
	})
	t.Run("a session id is no credential: another principal's session is not found", func(t *testing.T) {
		resp, body := post(t, d.addr, aliceKey, initializeBody)
		sid := resp.Header.Get("Mcp-Session-Id")
		if resp.StatusCode != 200 || sid == "" {
			t.Fatalf("initialize: %d %s", resp.StatusCode, body)
		}
		req, _ := http.NewRequest(http.MethodPost, "http://"+d.addr+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Authorization", "Bearer "+iss.token(t, jwt.MapClaims{"sub": "bob"}))
		r2, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r2.Body)
		r2.Body.Close()
		if r2.StatusCode != http.StatusNotFound || !bytes.Contains(b, []byte("session not found")) {
			t.Errorf("bob on alice's session: %d %s, want 404", r2.StatusCode, b)
		}
	})
	t.Run("refusals are logged, credentials never", func(t *testing.T) {
		if n := len(d.logged("auth: request refused")); n < 6 {
			t.Errorf("%d refusals logged, want at least 6", n)
		}
		if strings.Contains(d.dump(), aliceKey) || strings.Contains(d.dump(), "pf_mallory") {
			t.Error("a key reached the log")
		}
	})
}

// TestProxyAuthStartRefusals runs the binary with faulty configurations
// and checks that each refuses to start, naming every problem.
func TestProxyAuthStartRefusals(t *testing.T) {
	bin := buildBinary(t)
	bad := writeFile(t, "bad.json", `{"jwt":{"issuer":"","audience":"","jwks":"","refresh":"soon"},
  "principals":{"a":{"keySha256":["xyz"]},"b":{"keySha256":["`+sha256Hex("k")+`","`+sha256Hex("k")+`"]}}}`)
	missingJWKS := writeFile(t, "nojwks.json", `{"jwt":{"issuer":"i","audience":"a","jwks":"/nonexistent/jwks.json"}}`)
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"a non-loopback listener without principals", []string{"--listen", "0.0.0.0:0", "--upstream", "http://127.0.0.1:1/mcp"},
			[]string{"--listen 0.0.0.0:0 is not a loopback address and no --principals file is given"}},
		{"a principals file with every problem", []string{"--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:1/mcp", "--principals", bad},
			[]string{"6 problems", "/jwt/issuer is empty", "/jwt/audience is empty", "/jwt/jwks is empty", `/jwt/refresh "soon"`,
				`/principals/a/keySha256/0: "xyz" is not 64 hex digits`, `/principals/b/keySha256/1: the same key is listed for "b"`}},
		{"a JWKS file that cannot be read", []string{"--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:1/mcp", "--principals", missingJWKS},
			[]string{"jwt.jwks /nonexistent/jwks.json", "no such file"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := proxyRefusal(t, bin, nil, c.args...)
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// statelessBody is a tools/list of the 2026-07-28 revision, with the
// headers it needs.
func statelessPost(t *testing.T, addr, token string) (*http.Response, string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/list")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestProxyUpstreamCredentials puts the binary in front of an upstream
// that demands a token, and checks the three ways through: the caller's
// token forwarded, a token injected from the environment or from a file,
// and none, where the upstream's 401 reaches the client with its
// challenge.
func TestProxyUpstreamCredentials(t *testing.T) {
	bin := buildBinary(t)
	const secret = "up-secret-81f2"
	up := newTokenUpstream(t, secret)
	callQuote := func(t *testing.T, cs *mcp.ClientSession) {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: mcptest.Quote, Arguments: map[string]any{"symbol": "ACME"}})
		if err != nil || res.IsError {
			t.Fatalf("call: %v %+v", err, res)
		}
	}
	tokenFile := writeFile(t, "upstream-token", "Bearer "+secret+"\n")
	for _, c := range []struct {
		name   string
		env    []string
		args   []string
		client string // the client's bearer token
	}{
		{"the caller's token forwarded", nil, []string{"--upstream-forward-authorization"}, secret},
		{"a token injected from the environment", []string{"UP_AUTH=Bearer " + secret}, []string{"--upstream-header", "Authorization=env:UP_AUTH"}, ""},
		{"a token injected from a file", nil, []string{"--upstream-header", "Authorization=file:" + tokenFile}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := startAuthProxy(t, bin, c.env, append([]string{"--upstream", up.url()}, c.args...)...)
			before := up.counts.Get(mcptest.Quote)
			cs, err := connectAs(t, d.addr, c.client)
			if err != nil {
				t.Fatalf("connect: %v\n%s", err, d.dump())
			}
			callQuote(t, cs)
			cs.Close()
			if got := up.counts.Get(mcptest.Quote) - before; got != 1 {
				t.Errorf("the upstream ran %d quotes, want 1", got)
			}
			// The 2026-07-28 path carries the same credentials.
			if resp, body := statelessPost(t, d.addr, c.client); resp.StatusCode != 200 || !strings.Contains(body, mcptest.Quote) {
				t.Errorf("stateless tools/list: %d %s", resp.StatusCode, body)
			}
		})
	}
	t.Run("no credentials: the upstream's 401 and challenge reach the client", func(t *testing.T) {
		d := startAuthProxy(t, bin, nil, "--upstream", up.url())
		for name, do := range map[string]func() (*http.Response, string){
			"initialize":            func() (*http.Response, string) { return post(t, d.addr, "", initializeBody) },
			"2026-07-28 tools/list": func() (*http.Response, string) { return statelessPost(t, d.addr, "") },
		} {
			resp, body := do()
			if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != upstreamChallenge {
				t.Errorf("%s: status %d, challenge %q; want 401 with the upstream's challenge", name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
			}
			if !json.Valid([]byte(body)) || !strings.Contains(body, `"upstreamStatus":401`) {
				t.Errorf("%s: body %s: want a JSON-RPC error naming the upstream's status", name, body)
			}
		}
	})
	t.Run("a value on the command line is refused", func(t *testing.T) {
		out := proxyRefusal(t, bin, nil, "--upstream", up.url(), "--upstream-header", "Authorization=Bearer "+secret)
		if !strings.Contains(out, "must come from env:VARIABLE or file:PATH") || strings.Contains(out, secret) {
			t.Errorf("output:\n%s", out)
		}
	})
	t.Run("a missing variable and a missing file are each named", func(t *testing.T) {
		out := proxyRefusal(t, bin, nil, "--upstream", up.url(), "--upstream-header", "X-Api-Key=env:NOPE",
			"--upstream-header", "Authorization=file:/nonexistent/token")
		for _, w := range []string{"X-Api-Key: the environment variable NOPE is empty or not set", "Authorization: stat /nonexistent/token"} {
			if !strings.Contains(out, w) {
				t.Errorf("output lacks %q:\n%s", w, out)
			}
		}
	})
}

// TestProxyConfigWarnings produces every configuration warning of the
// proxy from the built binary: a budget no price binds (at start), a
// configured tool the upstream does not list and an upstream schema the
// guard cannot use (when tools/list arrives); and, with --strict, the
// start refused.
func TestProxyConfigWarnings(t *testing.T) {
	bin := buildBinary(t)
	up := newTokenUpstream(t, "")
	// A misspelt tool name, unpriced: the real market_quote runs unpriced.
	ops := writeFile(t, "ops.json", `{"builtins":false,"operations":[{"provider":"mcp","name":"market_qoute","priceUsd":0},`+
		`{"provider":"mcp","name":"create_ticket","schema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}}]}`)
	d := startAuthProxy(t, bin, nil, "--upstream", up.url(), "--operations", ops, "--budget-usd", "2")
	cs, err := connectAs(t, d.addr, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	// A call makes the guard read the list (a 2026-07-28 client's list
	// may pass as an event stream, which the proxy does not read).
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: mcptest.Quote, Arguments: map[string]any{"symbol": "ACME"}}); err != nil {
		t.Fatal(err)
	}
	// A call of the tool whose schema is not used: its log line says why.
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "lookup_order", Arguments: map[string]any{"id": 7}}); err != nil {
		t.Fatal(err)
	}
	cs.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var reason any
		for _, l := range d.logged("mcp proxy: tools/call") {
			if l["tool"] == "lookup_order" {
				reason = l["schemaUnchecked"]
			}
		}
		if r, _ := reason.(string); strings.Contains(r, "https://example.com/order-id.json") {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("the call line of lookup_order has schemaUnchecked %v, want the reason naming the $ref", reason)
			break
		}
	}
	want := map[string]string{
		"budget_unbound":  "proxy: --budget-usd 2 cannot bind: no operation of --operations has a priceUsd above 0",
		"tool_not_listed": "proxy: --operations configures tool market_qoute, which the upstream does not list",
		"schema_unusable": "proxy: the upstream's inputSchema of tool lookup_order cannot be used",
	}
	deadline := time.Now().Add(10 * time.Second)
	for code, msg := range want {
		for {
			var got []map[string]any
			d.mu.Lock()
			for _, l := range d.lines {
				if l["problem"] == code {
					got = append(got, l)
				}
			}
			d.mu.Unlock()
			if len(got) == 1 && got[0]["level"] == "WARN" && strings.HasPrefix(got[0]["msg"].(string), msg) {
				if r, _ := got[0]["reason"].(string); code == "schema_unusable" && !strings.Contains(r, "$ref") {
					t.Errorf("schema_unusable: reason field %q does not name the $ref", r)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%s: got %v, want one WARN line starting %q", code, got, msg)
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Run("--strict refuses the start", func(t *testing.T) {
		out := proxyRefusal(t, bin, nil, "--listen", "127.0.0.1:0", "--upstream", up.url(), "--operations", ops, "--budget-usd", "2", "--strict")
		if !strings.Contains(out, "--budget-usd 2 cannot bind") || !strings.Contains(out, "(--strict)") {
			t.Errorf("output:\n%s", out)
		}
	})
}
