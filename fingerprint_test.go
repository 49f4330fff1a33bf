package preflight

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/strictjson"
)

// The guide (server/site/index.md) publishes these vectors so that any
// language can reproduce the hashes. The expected values were computed
// independently of this package: SHA-256 over the canonical text shown,
// written by hand.
func TestHashVectors(t *testing.T) {
	t.Run("requestFingerprint", func(t *testing.T) {
		// canonical: {"fingerprintVersion":2,"operation":"web_search","provider":"search","request":{"max_results":5,"query":"RFC 8785"}}
		d, err := decideBytes([]byte(`{"runId":"r","stepId":"s","budget":{"remainingUsd":1},
			"tool":{"provider":"search","operation":"web_search","request":{"query":"RFC 8785","max_results":5.0},"estimatedExternalCostUsd":0.01}}`))
		if err != nil {
			t.Fatal(err)
		}
		if want := "c69bd513b7ab85be5c0dc87835aea8dc30e42a00f8a2d20119ec74e96391325b"; d.RequestFingerprint != want {
			t.Errorf("fingerprint = %s, want %s", d.RequestFingerprint, want)
		}
	})
	t.Run("requestHash", func(t *testing.T) {
		// canonical: {"request":{"body":{"name":"widget","price":1.5},"headers":{"content-type":"application/json"},
		// "method":"POST","url":"https://api.example.com/v1/items"},"schema":{"required":["name"],"type":"object"}}
		r, err := checkBytes([]byte(`{"request":{"method":"post","url":"https://api.example.com/v1/items",
			"headers":{"Content-Type":"application/json"},"body":{"name":"widget","price":1.50}},
			"schema":{"type":"object","required":["name"]},"economics":{"downstreamCostUsd":1,"billsOnInvalidRequest":false,"retryCostUsd":0}}`))
		if err != nil {
			t.Fatal(err)
		}
		if want := "a668ceec4f3a3ab5b3f932979d96574f2b7824664de101b6092942e0078a49ce"; r.RequestHash != want {
			t.Errorf("requestHash = %s, want %s", r.RequestHash, want)
		}
	})
	t.Run("requestHash with headers and query", func(t *testing.T) {
		// canonical: {"request":{"headers":{"accept":"4","x-a":"2","x-b":"1","Ünï":"3"},"method":"GET",
		// "query":{"a":[2],"b":1},"url":"https://api.example.com/q"},"schema":{}}
		r, err := checkBytes([]byte(`{"request":{"method":"GET","url":"https://api.example.com/q",
			"headers":{"X-B":"1","x-a":"2","Ünï":"3","Accept":"4"},"query":{"b":1,"a":[2.0]}},"schema":{}}`))
		if err != nil {
			t.Fatal(err)
		}
		if want := "dae19bbbf9694dd6f9a75918f32527bd5bc9b81ba36a8f024ca3804c9342068f"; r.RequestHash != want {
			t.Errorf("requestHash = %s, want %s", r.RequestHash, want)
		}
	})
}

// Different integers must never share a hash: a fingerprint shared by two
// identifiers would let Decide reuse one's saved result for the other.
// Spellings of one value still share one (RFC 8785's number form).
func TestHashesKeepIntegers(t *testing.T) {
	fp := func(payload string) string {
		v, err := strictjson.Parse([]byte(payload), strictjson.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		h, herr := fingerprint("x", "get_post", v)
		if herr != nil {
			t.Fatal(herr)
		}
		return h
	}
	hash := func(body string) string {
		r, err := checkBytes([]byte(`{"request":{"method":"POST","url":"https://a.example/","body":` + body + `},"schema":{}}`))
		if err != nil {
			t.Fatal(err)
		}
		return r.RequestHash
	}
	for _, tt := range []struct {
		a, b string
		same bool
	}{
		{`{"id":1790000000000000001}`, `{"id":1790000000000000002}`, false},
		{`{"id":9007199254740993}`, `{"id":9007199254740992}`, false},
		{`{"id":-9223372036854775808}`, `{"id":-9223372036854775807}`, false},
		{`{"id":5}`, `{"id":5.0}`, true},
		{`{"id":100}`, `{"id":1e2}`, true},
		{`{"id":9007199254740992}`, `{"id":9007199254740992.0}`, true},
		// Past 800 digits, where strconv.ParseFloat alone misreads them
		// (1 as 0.1, or as 0).
		{`{"id":1}`, `{"id":1` + strings.Repeat("0", 800) + `e-800}`, true},
		{`{"id":1}`, `{"id":1` + strings.Repeat("0", 1500) + `e-1500}`, true},
		{`{"id":0}`, `{"id":1` + strings.Repeat("0", 1500) + `e-1500}`, false},
		{`{"id":0.1}`, `{"id":1` + strings.Repeat("0", 800) + `e-800}`, false},
	} {
		if got := fp(tt.a) == fp(tt.b); got != tt.same {
			t.Errorf("fingerprints of %s and %s: same = %v, want %v", tt.a, tt.b, got, tt.same)
		}
		if got := hash(tt.a) == hash(tt.b); got != tt.same {
			t.Errorf("requestHashes of %s and %s: same = %v, want %v", tt.a, tt.b, got, tt.same)
		}
	}
}

// An empty headers object hashes as no headers, however the request
// arrives: as JSON, built in Go with an empty map, or decoded and edited.
func TestRequestHashEmptyHeaders(t *testing.T) {
	const tail = `"url":"https://a.example/"},"schema":{}}`
	want, err := checkBytes([]byte(`{"request":{"method":"POST","body":2,` + tail))
	if err != nil {
		t.Fatal(err)
	}
	sent, err := checkBytes([]byte(`{"request":{"method":"POST","headers":{},"body":2,` + tail))
	if err != nil {
		t.Fatal(err)
	}
	built, err := Check(&CheckRequest{Request: ProposedRequest{Method: "POST", URL: "https://a.example/",
		Headers: map[string]string{}, Body: json.RawMessage("2")}, Schema: json.RawMessage("{}")})
	if err != nil {
		t.Fatal(err)
	}
	req, err := DecodeCheckRequest([]byte(`{"request":{"method":"POST","headers":{},"body":1,` + tail))
	if err != nil {
		t.Fatal(err)
	}
	req.Request.Body = json.RawMessage("2")
	edited, err := Check(req)
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]string{"sent": sent.RequestHash, "built": built.RequestHash, "edited": edited.RequestHash} {
		if got != want.RequestHash {
			t.Errorf("%s with empty headers: requestHash %s, want %s (no headers)", name, got, want.RequestHash)
		}
	}
}

// Header names are folded in ASCII only, the case HTTP ignores: a
// non-ASCII letter keeps its case in the hash, and the Kelvin sign is not a
// k, so K-x and k-x are two headers.
func TestHeaderNamesFoldASCIIOnly(t *testing.T) {
	hash := func(headers string) (string, error) {
		r, err := checkBytes([]byte(`{"request":{"method":"GET","url":"https://a.example/","headers":` + headers + `},"schema":{}}`))
		if err != nil {
			return "", err
		}
		return r.RequestHash, nil
	}
	a, err := hash(`{"X-\u00dcber":"1"}`)
	if err != nil {
		t.Fatal(err)
	}
	b, err := hash(`{"x-\u00fcber":"1"}`)
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Errorf("X-Über and x-über hash alike; only ASCII letters are folded")
	}
	if _, err := hash(`{"\u212a-x":"1","k-x":"2"}`); err != nil {
		t.Errorf("the Kelvin sign and k are different header names, got %v", err)
	}
	if _, err := hash(`{"K-x":"1","k-x":"2"}`); err == nil {
		t.Errorf("K-x and k-x are one header name, accepted twice")
	}
}

// TestWritePlainHeaders: the stack path of writeHeaders writes what the
// general one writes, for every set of headers it takes, and declines the
// rest.
func TestWritePlainHeaders(t *testing.T) {
	r := rand.New(rand.NewPCG(38, 1))
	pieces := []string{"Content-Type", "content-type-x", "Accept", "X-API-Key", "a", "A", "B", "b-", "ä", "é-Name", "Zz", "x\"y", "~", "0", "\x7f"}
	taken := 0
	for range 5000 {
		var hs []header
		seen := map[string]bool{}
		for range r.IntN(11) {
			name := pieces[r.IntN(len(pieces))] + strings.Repeat("k", r.IntN(3)*r.IntN(60))
			if low := strings.ToLower(name); !seen[low] { // the decoder refuses names equal but for case
				seen[low] = true
				hs = append(hs, header{name, pieces[r.IntN(len(pieces))]})
			}
		}
		var plain, general canonicalWriter
		writeAnyHeaders(&general, hs)
		if !writePlainHeaders(&plain, hs) {
			if len(plain.buf) != 0 {
				t.Fatalf("%q: declined, having written %q", hs, plain.buf)
			}
			continue
		}
		taken++
		if string(plain.buf) != string(general.buf) {
			t.Fatalf("%q: stack path wrote %s, general path %s", hs, plain.buf, general.buf)
		}
	}
	if taken < 1000 {
		t.Errorf("the stack path took %d header sets; the test misses it", taken)
	}
}
