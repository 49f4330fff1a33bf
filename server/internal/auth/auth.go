// Package auth authenticates the callers of preflightd's MCP guarding
// proxy: bearer API keys (stored as SHA-256 digests) and JWTs verified
// against a JWKS, both configured by a principals file. On success the
// request's context carries the principal ([identity.WithPrincipal]); a
// request without valid credentials gets 401 with a WWW-Authenticate
// challenge that points, when JWTs are configured, at the protected-
// resource metadata of RFC 9728, as the MCP authorization specification
// asks.
//
// It never calls the issuer but for the key set, and never logs a
// credential.
package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"

	"github.com/agentpreflight/preflight/server/internal/identity"
)

// MetadataPath is where the protected-resource metadata is served.
const MetadataPath = "/.well-known/oauth-protected-resource"

// Authenticator checks the credentials of requests. It is safe for
// concurrent use.
type Authenticator struct {
	file   *File
	keys   []keyEntry
	jwt    *jwt.Parser
	kf     keyfunc.Keyfunc
	claim  string
	log    *slog.Logger
	closed chan struct{}
	once   sync.Once
}

type keyEntry struct {
	sum       [32]byte
	principal string
}

// New returns the authenticator of f. With a JWT section it reads the key
// set once before returning (an unreadable key set is an error) and keeps
// refreshing it until Close. log nil means slog.Default().
func New(ctx context.Context, f *File, log *slog.Logger) (*Authenticator, error) {
	if log == nil {
		log = slog.Default()
	}
	a := &Authenticator{file: f, log: log, closed: make(chan struct{})}
	for name, p := range f.Principals {
		for _, k := range p.keys {
			a.keys = append(a.keys, keyEntry{k, name})
		}
	}
	if j := f.JWT; j != nil {
		a.claim = j.PrincipalClaim
		if a.claim == "" {
			a.claim = "sub"
		}
		a.jwt = jwt.NewParser(
			jwt.WithIssuer(j.Issuer), jwt.WithAudience(j.Audience), jwt.WithExpirationRequired(),
			jwt.WithLeeway(30*time.Second),
			jwt.WithValidMethods([]string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}))
		kf, err := a.keySet(ctx, j)
		if err != nil {
			return nil, fmt.Errorf("jwt.jwks %s: %w", j.JWKS, err)
		}
		a.kf = kf
	}
	return a, nil
}

// keySet returns the key function of the JWKS, from a URL or a file.
func (a *Authenticator) keySet(ctx context.Context, j *JWT) (keyfunc.Keyfunc, error) {
	if strings.HasPrefix(j.JWKS, "http://") || strings.HasPrefix(j.JWKS, "https://") {
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-a.closed; cancel() }()
		noErr := false // the first fetch must succeed
		kf, err := keyfunc.NewDefaultOverrideCtx(ctx, []string{j.JWKS}, keyfunc.Override{
			RefreshInterval:           j.refresh,
			HTTPTimeout:               10 * time.Second,
			NoErrorReturnFirstHTTPReq: &noErr,
			RefreshErrorHandlerFunc: func(u string) func(context.Context, error) {
				return func(_ context.Context, err error) {
					a.log.Warn("auth: the JWKS could not be refreshed; the keys read before stay in use", "jwks", u, "err", err)
				}
			},
		})
		if err != nil {
			cancel()
			return nil, err
		}
		return kf, nil
	}
	store := jwkset.NewMemoryStorage()
	mod, err := loadKeyFile(ctx, store, j.JWKS)
	if err != nil {
		return nil, err
	}
	go func() {
		t := time.NewTicker(j.refresh)
		defer t.Stop()
		for {
			select {
			case <-a.closed:
				return
			case <-t.C:
			}
			st, err := os.Stat(j.JWKS)
			if err == nil && st.ModTime().Equal(mod) {
				continue
			}
			if m, err := loadKeyFile(context.Background(), store, j.JWKS); err != nil {
				a.log.Warn("auth: the JWKS file could not be read again; the keys read before stay in use", "jwks", j.JWKS, "err", err)
			} else {
				mod = m
			}
		}
	}()
	return keyfunc.New(keyfunc.Options{Storage: store})
}

// loadKeyFile replaces the keys of store with those of the JWKS file at
// path and returns the file's modification time.
func loadKeyFile(ctx context.Context, store jwkset.Storage, path string) (time.Time, error) {
	st, err := os.Stat(path)
	if err != nil {
		return time.Time{}, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return time.Time{}, err
	}
	var set jwkset.JWKSMarshal
	if err := json.Unmarshal(data, &set); err != nil {
		return time.Time{}, fmt.Errorf("not a JWK set: %w", err)
	}
	var keys []jwkset.JWK
	for i, m := range set.Keys {
		k, err := jwkset.NewJWKFromMarshal(m, jwkset.JWKMarshalOptions{}, jwkset.JWKValidateOptions{})
		if err != nil {
			return time.Time{}, fmt.Errorf("key %d: %w", i, err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return time.Time{}, errors.New("the JWK set has no keys")
	}
	return st.ModTime(), store.KeyReplaceAll(ctx, keys)
}

// Close stops refreshing the key set.
func (a *Authenticator) Close() {
	a.once.Do(func() { close(a.closed) })
}

// Failure is why a request was not authenticated.
type Failure struct {
	// Code is the RFC 6750 error code: "" when no credentials came,
	// "invalid_token" or "invalid_request".
	Code string
	// Reason says what was wrong, for the answer and the log; it never
	// holds the credential.
	Reason string
}

// Authenticate returns the principal of r's credentials, or why there is
// none.
func (a *Authenticator) Authenticate(r *http.Request) (string, *Failure) {
	h := r.Header.Values("Authorization")
	switch {
	case len(h) == 0:
		return "", &Failure{Reason: "no credentials: send Authorization: Bearer with an API key or a JWT"}
	case len(h) > 1:
		return "", &Failure{Code: "invalid_request", Reason: "more than one Authorization header"}
	}
	scheme, token, ok := strings.Cut(h[0], " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", &Failure{Code: "invalid_request", Reason: "the Authorization header is not Bearer with a token"}
	}
	if a.jwt != nil && strings.Count(token, ".") == 2 {
		return a.verifyJWT(r.Context(), token)
	}
	sum := sha256.Sum256([]byte(token))
	principal := ""
	for _, k := range a.keys { // every entry compared, in constant time each
		if subtle.ConstantTimeCompare(sum[:], k.sum[:]) == 1 {
			principal = k.principal
		}
	}
	if principal == "" {
		return "", &Failure{Code: "invalid_token", Reason: "the API key is not known"}
	}
	return principal, nil
}

func (a *Authenticator) verifyJWT(ctx context.Context, token string) (string, *Failure) {
	claims := jwt.MapClaims{}
	if _, err := a.jwt.ParseWithClaims(token, claims, a.kf.KeyfuncCtx(ctx)); err != nil {
		return "", &Failure{Code: "invalid_token", Reason: "the JWT is not valid: " + err.Error()}
	}
	p, _ := claims[a.claim].(string)
	if p == "" {
		return "", &Failure{Code: "invalid_token", Reason: "the JWT has no string claim " + strconv.Quote(a.claim) + " to name its principal"}
	}
	return p, nil
}

// Challenge returns the WWW-Authenticate value of a 401 for f, for a
// request to r.
func (a *Authenticator) Challenge(r *http.Request, f *Failure) string {
	var b strings.Builder
	b.WriteString(`Bearer realm="preflight proxy"`)
	if a.file.JWT != nil {
		b.WriteString(`, resource_metadata=` + strconv.Quote(a.metadataURL(r)))
	}
	if f.Code != "" {
		b.WriteString(`, error=` + strconv.Quote(f.Code) + `, error_description=` + strconv.Quote(sanitize(f.Reason)))
	}
	return b.String()
}

// sanitize keeps s within what a quoted-string may hold.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '"' || r == '\\' || r < 0x20 || r > 0x7e {
			return '\''
		}
		return r
	}, s)
}

// Wrap returns h behind authentication: a request with valid credentials
// reaches h with its principal in its context; any other gets 401 with
// the challenge and a JSON-RPC error body. The protected-resource
// metadata is served at MetadataPath (and below it, RFC 9728's form for
// a resource with a path) without credentials.
func (a *Authenticator) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == MetadataPath || strings.HasPrefix(r.URL.Path, MetadataPath+"/") {
			a.serveMetadata(w, r)
			return
		}
		p, f := a.Authenticate(r)
		if f != nil {
			a.log.Info("auth: request refused", "path", r.URL.Path, "reason", f.Reason)
			w.Header().Set("WWW-Authenticate", a.Challenge(r, f))
			msg, _ := json.Marshal("unauthorized: " + f.Reason)
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":` + string(msg) + `}}`))
			return
		}
		h.ServeHTTP(w, r.WithContext(identity.WithPrincipal(r.Context(), p)))
	})
}

// Metadata is the protected-resource metadata document (RFC 9728).
type Metadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceName           string   `json:"resource_name"`
}

func (a *Authenticator) serveMetadata(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusMethodNotAllowed)
		w.Write([]byte(`{"error":{"code":"method_not_allowed","message":"GET the metadata"}}`))
		return
	}
	m := Metadata{Resource: a.resource(r), BearerMethodsSupported: []string{"header"}, ResourceName: "preflight MCP guarding proxy"}
	if a.file.JWT != nil {
		m.AuthorizationServers = []string{a.file.JWT.Issuer}
	}
	body, _ := json.Marshal(m)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "max-age=300")
	w.Write(body)
}

// resource returns the resource URL: the file's, or /mcp at the host the
// request came to.
func (a *Authenticator) resource(r *http.Request) string {
	if a.file.Resource != "" {
		return a.file.Resource
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + "/mcp"
}

// metadataURL is where the metadata of the resource is, in RFC 9728's
// form: the well-known path inserted before the resource's path.
func (a *Authenticator) metadataURL(r *http.Request) string {
	res := a.resource(r)
	i := strings.Index(res, "://")
	if i < 0 {
		return res
	}
	hostEnd := strings.IndexByte(res[i+3:], '/')
	if hostEnd < 0 {
		return res + MetadataPath
	}
	cut := i + 3 + hostEnd
	return res[:cut] + MetadataPath + strings.TrimSuffix(res[cut:], "/")
}
