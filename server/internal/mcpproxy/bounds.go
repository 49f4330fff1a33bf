package mcpproxy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The proxy's bounds when an Options field is zero; preflightd's flags
// default to the same values.
const (
	// DefaultMaxSessions bounds the sessions open at once: about 80 KiB
	// and two file descriptors each (the client's connection and the
	// upstream's), so 1,000 stay near 100 MB and far below the usual
	// descriptor limits.
	DefaultMaxSessions = 1000
	// DefaultMaxSessionsPerClient bounds the sessions of one remote
	// address, so that one client cannot take all of DefaultMaxSessions.
	DefaultMaxSessionsPerClient = 100
	// DefaultInitTimeout ends a session that sends nothing after its
	// initialize; a real client sends notifications/initialized at once.
	DefaultInitTimeout = 30 * time.Second
	// DefaultBodyTimeout bounds the reading of one POST body (at most
	// MaxBodyBytes, 4 MiB by default).
	DefaultBodyTimeout = 10 * time.Second
	// DefaultMaxBatch bounds the messages of one JSON-RPC batch: twice
	// the calls a session may have in flight. The SDK decodes a whole
	// batch before the first call is refused, so 30,000 calls in one body
	// would cost memory long before the in-flight bound is reached.
	DefaultMaxBatch = 2 * DefaultMaxCallsInFlightPerSession
)

// retryAfter is the Retry-After, in seconds, of a 429 or 503.
const retryAfter = "5"

// JSON-RPC error codes of the proxy's own refusals.
const (
	codeInvalidRequest = -32600 // the request itself is refused (origin, content type, body)
	codeLimit          = -32000 // a bound of the proxy was reached
)

// refuse answers with status and a JSON-RPC error carrying id (null when
// the request's id is not known) and msg.
func refuse(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	h := w.Header()
	for _, k := range []string{"Cache-Control", sessionHeader} {
		h.Del(k)
	}
	h.Set("Content-Type", "application/json")
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		h.Set("Retry-After", retryAfter)
	}
	m, _ := json.Marshal(msg)
	w.WriteHeader(status)
	w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":` + strconv.Itoa(code) + `,"message":` + string(m) + `}}`))
}

// logID is what the logs show of a session id: the first 12 hex digits of
// its SHA-256. The id itself is the session's only credential, so it is
// never logged.
func logID(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:6])
}

// clientOf returns the client of r, the key of the per-client session
// bound: the IP address of the connection, or for IPv6 its /64 (one
// host's usual allocation, which holds more addresses than any bound). It
// never reads a header (X-Forwarded-For and the like are the client's to
// forge).
func clientOf(r *http.Request) string {
	host := hostOnly(r.RemoteAddr)
	a, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	a = a.Unmap().WithZone("")
	if a.Is6() {
		return netip.PrefixFrom(a, 64).Masked().String()
	}
	return a.String()
}

// hostAllowed reports whether r may be served: any Host on a non-loopback
// listener, a loopback name on a loopback one. Names are compared
// case-insensitively and may end with one dot ("LOCALHOST", "localhost.").
func hostAllowed(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return true
	}
	var ip net.IP
	if a, ok := local.(*net.TCPAddr); ok {
		ip = a.IP // without formatting the address and parsing it back
	} else {
		ip = net.ParseIP(hostOnly(local.String()))
	}
	if ip == nil || !ip.IsLoopback() {
		return true
	}
	return loopbackHost(r.Host)
}

// loopbackHost reports whether the Host header value h names a loopback
// host: localhost (any case, one trailing dot allowed) or a loopback IP
// address, with or without a port.
func loopbackHost(h string) bool {
	h = hostOnly(h)
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	if strings.EqualFold(strings.TrimSuffix(h, "."), "localhost") {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.Zone() == "" && a.Unmap().IsLoopback()
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}

// NormalizeOrigin returns the canonical form of a web origin,
// scheme://host[:port]: scheme and host in lower case, the scheme's
// default port dropped. It refuses anything else (a path, query, user
// info, a scheme other than http or https, "null").
func NormalizeOrigin(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") ||
		u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" ||
		strings.HasSuffix(s, "?") || strings.HasSuffix(s, "#") {
		return "", fmt.Errorf("%q is not an origin such as https://app.example.com or http://localhost:3000", s)
	}
	scheme := u.Scheme // url.Parse lowers it
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if strings.HasSuffix(u.Host, ":") || (port != "" && !allDigits(port)) {
		return "", fmt.Errorf("%q is not an origin such as https://app.example.com or http://localhost:3000", s)
	}
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host, nil
}

func allDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// originAllowed reports whether r's Origin header is absent (a client that
// is not a browser), one of allowed (normalized origins), or an http(s)
// origin on a loopback host (localhost or a loopback address, any port):
// a page the user's own machine serves, which is not what DNS rebinding
// forges (a rebinding page keeps its own foreign origin).
func originAllowed(r *http.Request, allowed map[string]bool) bool {
	vs := r.Header.Values("Origin")
	if len(vs) == 0 {
		return true
	}
	if len(vs) > 1 {
		return false
	}
	o, err := NormalizeOrigin(vs[0])
	if err != nil {
		return false
	}
	if allowed[o] {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && loopbackHost(u.Host)
}

// jsonContent reports whether a POST's Content-Type is application/json,
// parameters (such as charset) allowed.
func jsonContent(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "application/json"
}

// batchLen returns the number of messages in body, a JSON-RPC message or
// batch, counting no further than limit+1: a body that is not an array is
// one message, an array one message more than it has commas at its top
// level. Whether the body is JSON is for the SDK to judge.
func batchLen(body []byte, limit int) int {
	i := 0
	for i < len(body) && (body[i] == ' ' || body[i] == '\t' || body[i] == '\n' || body[i] == '\r') {
		i++
	}
	if i == len(body) || body[i] != '[' {
		return 1
	}
	n, depth, inString := 1, 0, false
	for ; i < len(body) && n <= limit; i++ {
		switch c := body[i]; {
		case inString && c == '\\':
			i++ // the escaped byte cannot end the string
		case c == '"':
			inString = !inString
		case inString:
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
		case c == ',' && depth == 1:
			n++
		}
	}
	return n
}
