package mcpproxy

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync/atomic"
)

// Credentials are what the proxy sends an HTTP upstream to authenticate
// itself or its caller. The client's own headers never go upstream but
// these.
type Credentials struct {
	// ForwardAuthorization sends the client's Authorization header
	// upstream: with a session, the one of the session's latest request.
	ForwardAuthorization bool
	// Headers returns the headers set on every upstream request (an API key
	// read from the environment or a file, say); called for each request,
	// so that a rotated file takes effect. An error fails the request.
	Headers func() (http.Header, error)
}

// Denial is an upstream's refusal of the proxy's request for want of
// credentials: 401 or 403 with its challenge. The client gets the same
// status and challenge, not 502.
type Denial struct {
	Status    int
	Challenge string // WWW-Authenticate, "" when absent
}

// connCreds are the credentials of one upstream connection (a session):
// the client's Authorization to forward, and the upstream's last denial.
type connCreds struct {
	creds  *Credentials
	auth   atomic.Pointer[string]
	denial atomic.Pointer[Denial]
}

type connCredsKey struct{}

func credsOf(ctx context.Context) *connCreds {
	c, _ := ctx.Value(connCredsKey{}).(*connCreds)
	return c
}

// sets reports whether setHeaders may set a header on an upstream
// request (with clientAuth the client's Authorization).
func (c *Credentials) sets(clientAuth string) bool {
	return c != nil && (c.Headers != nil || c.ForwardAuthorization && clientAuth != "")
}

// setHeaders sets the credentials on an upstream request: the injected
// headers, then the client's Authorization when it is forwarded.
func (c *Credentials) setHeaders(h http.Header, clientAuth string) error {
	if c == nil {
		return nil
	}
	if c.Headers != nil {
		hs, err := c.Headers()
		if err != nil {
			return err
		}
		for k, vs := range hs {
			h[http.CanonicalHeaderKey(k)] = vs
		}
	}
	if c.ForwardAuthorization && clientAuth != "" {
		h.Set("Authorization", clientAuth)
	}
	return nil
}

// credTransport sets a session's credentials on its upstream requests and
// notes a 401 or 403.
type credTransport struct {
	base http.RoundTripper
	cc   *connCreds
}

func (t credTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	if t.cc == nil {
		return base.RoundTrip(r)
	}
	auth := ""
	if p := t.cc.auth.Load(); p != nil {
		auth = *p
	}
	if t.cc.creds.sets(auth) {
		// A RoundTripper leaves its request as it came: the headers go on
		// a copy, made only when there are some to set.
		r = r.Clone(r.Context())
		if err := t.cc.creds.setHeaders(r.Header, auth); err != nil {
			return nil, err
		}
	}
	resp, err := base.RoundTrip(r)
	if err == nil {
		if d := denialOf(resp); d != nil {
			t.cc.denial.Store(d)
		}
	}
	return resp, err
}

// denialOf returns the denial resp is, or nil.
func denialOf(resp *http.Response) *Denial {
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		return nil
	}
	return &Denial{Status: resp.StatusCode, Challenge: resp.Header.Get("WWW-Authenticate")}
}

// writeDenial answers id (JSON text; nil for none) with the upstream's
// denial: its status, its challenge, and a JSON-RPC error saying that the
// upstream refused.
func writeDenial(w http.ResponseWriter, id json.RawMessage, d *Denial) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	h := w.Header()
	for _, k := range []string{"Cache-Control", sessionHeader} {
		h.Del(k)
	}
	if d.Challenge != "" {
		h.Set("WWW-Authenticate", d.Challenge)
	}
	msg, _ := json.Marshal("the upstream MCP server refused the credentials (HTTP " + strconv.Itoa(d.Status) + " " + http.StatusText(d.Status) + ")")
	h.Set("Content-Type", "application/json")
	w.WriteHeader(d.Status)
	w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":` + strconv.Itoa(codeInvalidRequest) +
		`,"message":` + string(msg) + `,"data":{"upstreamStatus":` + strconv.Itoa(d.Status) + `}}}`))
}
