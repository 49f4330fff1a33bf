package auth

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"
)

// File is a principals file: who may call, by API key or by JWT.
//
//	{
//	  "resource": "https://mcp.example.com/mcp",
//	  "jwt": {"issuer": "https://id.example.com/", "audience": "https://mcp.example.com/mcp",
//	          "jwks": "https://id.example.com/.well-known/jwks.json", "principalClaim": "sub", "refresh": "15m"},
//	  "principals": {
//	    "ci-bot": {"keySha256": ["9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"]}
//	  }
//	}
//
// An API key is stored only as the hex SHA-256 of its bytes (printf %s
// "$KEY" | sha256sum). A JWT's principal is its subject, or the string
// claim principalClaim names; it need not be listed under principals.
type File struct {
	// Resource is the URL of the protected resource (the proxy's /mcp) that
	// the protected-resource metadata names. Empty means the URL the
	// request came to.
	Resource string `json:"resource,omitempty"`
	// JWT, when set, accepts bearer JWTs signed by a key of the JWKS.
	JWT *JWT `json:"jwt,omitempty"`
	// Principals are the callers by name.
	Principals map[string]Principal `json:"principals,omitempty"`
}

// JWT configures the JWTs the proxy accepts.
type JWT struct {
	// Issuer is the required iss claim, and the authorization server the
	// protected-resource metadata names.
	Issuer string `json:"issuer"`
	// Audience is the required aud claim (one of its values).
	Audience string `json:"audience"`
	// JWKS is the key set: an http(s) URL, fetched at start and refreshed
	// every Refresh (and, at most every 5 minutes, for a key id it does
	// not know), or a file path, read at start and again every Refresh.
	JWKS string `json:"jwks"`
	// PrincipalClaim names the string claim that is the principal; empty
	// means "sub".
	PrincipalClaim string `json:"principalClaim,omitempty"`
	// Refresh is how often the key set is read again, a Go duration; empty
	// means 1h.
	Refresh string `json:"refresh,omitempty"`

	refresh time.Duration
}

// Principal is one caller.
type Principal struct {
	// KeySHA256 are the hex SHA-256 digests of the caller's API keys.
	KeySHA256 []string `json:"keySha256,omitempty"`
	// Policy, when set, is what the caller may do (see [Policy]). A JWT's
	// principal gets the policy of its name here, when it is listed.
	Policy *Policy `json:"policy,omitempty"`

	keys [][32]byte
}

// maxFileBytes bounds a principals file.
const maxFileBytes = 4 << 20

// Load reads and checks the principals file at path. Every problem is
// named in the error, one per line.
func Load(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxFileBytes)
	}
	file, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return file, nil
}

// Parse decodes and checks a principals file.
func Parse(data []byte) (*File, error) {
	var f File
	if unknown := unknownMembers(data); len(unknown) > 0 {
		return nil, problemsError(unknown)
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&f); err != nil {
		return nil, fmt.Errorf("not a principals file: %w", err)
	}
	if d.More() {
		return nil, errors.New("not a principals file: data after the JSON object")
	}
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if f.Resource != "" {
		if u, err := url.Parse(f.Resource); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add("/resource %q is not an absolute http(s) URL", f.Resource)
		}
	}
	if j := f.JWT; j != nil {
		if j.Issuer == "" {
			add("/jwt/issuer is empty: name the issuer whose tokens are accepted")
		}
		if j.Audience == "" {
			add("/jwt/audience is empty: name the audience the tokens must carry (this proxy's resource URL, usually)")
		}
		if j.JWKS == "" {
			add("/jwt/jwks is empty: give the key set's URL or a file path")
		}
		j.refresh = time.Hour
		if j.Refresh != "" {
			d, err := time.ParseDuration(j.Refresh)
			if err != nil || d < time.Second {
				add("/jwt/refresh %q is not a duration of at least 1s", j.Refresh)
			}
			j.refresh = d
		}
	}
	seen := map[[32]byte]string{}
	names := make([]string, 0, len(f.Principals))
	for name := range f.Principals {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := f.Principals[name]
		at := "/principals/" + pointerEscape(name)
		if name == "" || strings.TrimSpace(name) != name || len(name) > 128 {
			add("%s: a principal's name must be 1 to 128 characters without surrounding spaces", at)
		}
		for i, h := range p.KeySHA256 {
			var k [32]byte
			if b, err := hex.DecodeString(h); err != nil || len(b) != 32 {
				add("%s/keySha256/%d: %q is not 64 hex digits (the SHA-256 of the key: printf %%s \"$KEY\" | sha256sum)", at, i, h)
				continue
			} else {
				copy(k[:], b)
			}
			if other, dup := seen[k]; dup {
				add("%s/keySha256/%d: the same key is listed for %q", at, i, other)
				continue
			}
			seen[k] = name
			p.keys = append(p.keys, k)
		}
		if p.Policy != nil {
			problems = append(problems, p.Policy.check(at+"/policy")...)
		}
		f.Principals[name] = p
	}
	if f.JWT == nil && len(seen) == 0 {
		add("no way to authenticate: give keySha256 under a principal, or a jwt section")
	}
	if len(problems) > 0 {
		return nil, problemsError(problems)
	}
	return &f, nil
}

// problemsError lists problems, one a line.
func problemsError(problems []string) error {
	if len(problems) == 1 {
		return errors.New("1 problem:\n  " + problems[0])
	}
	return fmt.Errorf("%d problems:\n  %s", len(problems), strings.Join(problems, "\n  "))
}

// PolicyOf returns the policy of principal, nil when it has none.
func (f *File) PolicyOf(principal string) *Policy {
	if f == nil {
		return nil
	}
	return f.Principals[principal].Policy
}

// pointerEscape escapes a JSON Pointer reference token.
func pointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
