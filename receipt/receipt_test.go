package receipt_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/receipt"
	"github.com/google/go-cmp/cmp"
)

// testKey derives a fixed Ed25519 key from name, so that tests and the
// README's vector are reproducible.
func testKey(name string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte(name))
	return ed25519.NewKeyFromSeed(seed[:])
}

func testSigner(t testing.TB, name string) *receipt.Signer {
	t.Helper()
	s, err := receipt.NewSigner(testKey(name))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func pemPrivate(t testing.TB, k ed25519.PrivateKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

func pemPublic(t testing.TB, k ed25519.PublicKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

const (
	decideRequest = `{"runId":"r1","stepId":"s1","tool":{"provider":"search","operation":"web_search","request":{"query":"ed25519 receipts","max_results":5},"estimatedExternalCostUsd":0.01},"budget":{"remainingUsd":1}}`
	checkRequest  = `{"request":{"method":"POST","url":"https://api.example.com/orders","body":{"sku":"A-1","qty":0}},"schema":{"type":"object","required":["sku","qty"],"properties":{"qty":{"type":"integer","minimum":1}}},"economics":{"downstreamCostUsd":0.05,"billsOnInvalidRequest":true,"retryCostUsd":0.01}}`
)

// answer runs the library on request as the server does and returns the
// answer's JSON.
func answer(t testing.TB, kind receipt.Kind, request string) []byte {
	t.Helper()
	var v any
	var err error
	if kind == receipt.KindCheck {
		v, err = preflight.CheckJSON([]byte(request))
	} else {
		v, err = preflight.DecideJSON([]byte(request))
	}
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sign(t testing.TB, s *receipt.Signer, response []byte, prev string) receipt.Receipt {
	t.Helper()
	r, err := s.Sign(response, prev)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestVerify: each way a receipt, its response and its request can fail
// to agree is found, and named where it happens.
func TestVerify(t *testing.T) {
	signer := testSigner(t, "signer")
	other := testSigner(t, "another signer")
	decision := answer(t, receipt.KindDecision, decideRequest)
	check := answer(t, receipt.KindCheck, checkRequest)
	first := sign(t, signer, check, "")
	chained := sign(t, signer, decision, first.Hash())
	fp := func(req string) string {
		d, err := preflight.DecideJSON([]byte(req))
		if err != nil {
			t.Fatal(err)
		}
		return `"` + d.RequestFingerprint + `"`
	}
	otherQuery := strings.Replace(decideRequest, "ed25519 receipts", "ed25519 receipt", 1)
	poorer := strings.Replace(decideRequest, `"remainingUsd":1`, `"remainingUsd":0.001`, 1)
	swapped := signer.Keys()
	swapped[signer.KeyID()] = other.PublicKey()

	tests := []struct {
		name     string
		request  string
		response []byte
		receipt  receipt.Receipt
		keys     receipt.Keys
		prev     string
		want     []receipt.Finding // Message ignored
	}{
		{name: "valid decision", request: decideRequest, response: decision, receipt: sign(t, signer, decision, ""), keys: signer.Keys()},
		{name: "valid check", request: checkRequest, response: check, receipt: first, keys: signer.Keys()},
		{name: "valid chained, chain checked", request: decideRequest, response: decision, receipt: chained, keys: signer.Keys(), prev: first.Hash()},
		{name: "valid, the key found in a key set of several", request: decideRequest, response: decision, receipt: sign(t, signer, decision, ""),
			keys: mustKeys(t, append(pemPublic(t, other.PublicKey()), pemPublic(t, signer.PublicKey())...))},
		{
			name: "changed response: the verdict", request: decideRequest, receipt: sign(t, signer, decision, ""), keys: signer.Keys(),
			response: bytes.Replace(decision, []byte(`"decision":"allow"`), []byte(`"decision":"block"`), 1),
			want: []receipt.Finding{
				{Code: receipt.FindingSignature, Path: "/receipt/sig"},
				{Code: receipt.FindingResponse, Path: "/response/decision", Want: `"allow"`, Got: `"block"`},
			},
		},
		{
			name: "changed response: a member added", request: checkRequest, receipt: first, keys: signer.Keys(),
			response: bytes.Replace(check, []byte(`{"valid"`), []byte(`{"approved":true,"valid"`), 1),
			want: []receipt.Finding{
				{Code: receipt.FindingSignature, Path: "/receipt/sig"},
				{Code: receipt.FindingResponse, Path: "/response/approved", Got: `true`},
			},
		},
		{
			name: "reformatted response still verifies (canonical bytes are signed)", request: decideRequest, receipt: sign(t, signer, decision, ""), keys: signer.Keys(),
			response: indent(t, decision),
		},
		{
			name: "changed request: another query", request: otherQuery, response: decision, receipt: sign(t, signer, decision, ""), keys: signer.Keys(),
			want: []receipt.Finding{
				{Code: receipt.FindingRequest, Path: "/receipt/requestFingerprint", Want: fp(otherQuery), Got: fp(decideRequest)},
				{Code: receipt.FindingResponse, Path: "/response/requestFingerprint", Want: fp(otherQuery), Got: fp(decideRequest)},
			},
		},
		{
			name: "changed request: a smaller budget defers the same proposal", request: poorer, response: decision, receipt: sign(t, signer, decision, ""), keys: signer.Keys(),
			want: []receipt.Finding{
				{Code: receipt.FindingResponse, Path: "/response/decision", Want: `"defer"`, Got: `"allow"`},
				{Code: receipt.FindingResponse, Path: "/response/enforcement", Want: `"safe_to_skip"`, Got: `"execute"`},
				{Code: receipt.FindingResponse, Path: "/response/reasonCodes/0", Want: `"BUDGET_EXCEEDED"`, Got: `"NO_PROVEN_WASTE"`},
				{Code: receipt.FindingResponse, Path: "/response/estimated/confidence", Want: `1`, Got: `0.5`},
			},
		},
		{
			name: "wrong key: another signer's key set", request: decideRequest, response: decision, receipt: sign(t, signer, decision, ""), keys: other.Keys(),
			want: []receipt.Finding{{Code: receipt.FindingUnknownKey, Path: "/receipt/kid", Got: `"` + signer.KeyID() + `"`}},
		},
		{
			name: "wrong key under the receipt's key id", request: decideRequest, response: decision, receipt: sign(t, signer, decision, ""), keys: swapped,
			want: []receipt.Finding{{Code: receipt.FindingSignature, Path: "/receipt/sig"}},
		},
		{
			name: "broken chain: another previous receipt", request: decideRequest, response: decision, receipt: chained, keys: signer.Keys(),
			prev: sign(t, signer, decision, "").Hash(),
			want: []receipt.Finding{{Code: receipt.FindingChain, Path: "/receipt/prev", Want: `"` + sign(t, signer, decision, "").Hash() + `"`, Got: `"` + first.Hash() + `"`}},
		},
		{
			name: "broken chain: the link cut off", request: decideRequest, response: decision, receipt: sign(t, signer, decision, ""), keys: signer.Keys(),
			prev: first.Hash(),
			want: []receipt.Finding{{Code: receipt.FindingChain, Path: "/receipt/prev", Want: `"` + first.Hash() + `"`}},
		},
		{
			name: "broken chain: prev rewritten in the receipt", request: decideRequest, response: decision, keys: signer.Keys(), prev: strings.Repeat("0", 64),
			receipt: withPrev(chained, strings.Repeat("0", 64)),
			want:    []receipt.Finding{{Code: receipt.FindingSignature, Path: "/receipt/sig"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := receipt.Verify([]byte(tt.request), tt.response, tt.receipt, tt.keys, &receipt.VerifyOptions{Prev: tt.prev})
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			if want == nil {
				want = []receipt.Finding{}
			}
			if diff := cmp.Diff(want, got.Findings, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Message" }, cmp.Ignore())); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
			if got.OK() != (len(tt.want) == 0) {
				t.Errorf("OK() = %v with %d findings", got.OK(), len(got.Findings))
			}
			for _, f := range got.Findings {
				if f.Message == "" {
					t.Errorf("finding %s at %s has no message", f.Code, f.Path)
				}
			}
		})
	}
}

func withPrev(r receipt.Receipt, prev string) receipt.Receipt {
	r.Prev = prev
	return r
}

func mustKeys(t testing.TB, data []byte) receipt.Keys {
	t.Helper()
	k, err := receipt.ParseKeys(data)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func indent(t testing.TB, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestVerifyRefusesWhatCannotBeRecomputed: a request the library answers
// with an error, or one of the other kind, is an error, never a pass.
func TestVerifyRefusesWhatCannotBeRecomputed(t *testing.T) {
	s := testSigner(t, "signer")
	decision := answer(t, receipt.KindDecision, decideRequest)
	rc := sign(t, s, decision, "")
	for name, req := range map[string]string{
		"a check request for a decision's receipt": checkRequest,
		"not JSON":         `{"runId":`,
		"a missing budget": `{"runId":"r1","stepId":"s1","tool":{"provider":"search","operation":"web_search","request":{"query":"q"},"estimatedExternalCostUsd":0.01}}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := receipt.Verify([]byte(req), decision, rc, s.Keys(), nil); err == nil {
				t.Fatal("Verify returned no error")
			}
		})
	}
	if _, err := receipt.Verify([]byte(decideRequest), []byte(`{"decision":`), rc, s.Keys(), nil); err == nil {
		t.Fatal("Verify of a response that is not JSON returned no error")
	}
}

// TestSignDeterministic: the same answer, key and prev give the same
// receipt bytes, and the receipt's wire form reads back as itself.
func TestSignDeterministic(t *testing.T) {
	s := testSigner(t, "signer")
	decision := answer(t, receipt.KindDecision, decideRequest)
	a, b := sign(t, s, decision, ""), sign(t, s, indent(t, decision), "")
	if !bytes.Equal(a.Marshal(), b.Marshal()) {
		t.Fatalf("two signatures of one answer differ:\n%s\n%s", a.Marshal(), b.Marshal())
	}
	back, err := receipt.Parse(a.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a, back); diff != "" {
		t.Errorf("Parse(Marshal(r)) (-want +got):\n%s", diff)
	}
	c := sign(t, s, decision, a.Hash())
	if bytes.Equal(a.Signature, c.Signature) {
		t.Error("a chained receipt has the signature of the unchained one: prev is not signed")
	}
	if j, _ := json.Marshal(c); !bytes.Equal(j, c.Marshal()) {
		t.Errorf("json.Marshal = %s, want the wire form %s", j, c.Marshal())
	}
}

// TestSignRefuses: what is not an answer, and a prev that is not a hash,
// get an error.
func TestSignRefuses(t *testing.T) {
	s := testSigner(t, "signer")
	decision := answer(t, receipt.KindDecision, decideRequest)
	for name, c := range map[string]struct {
		response, prev string
	}{
		"not JSON":                 {`{"decision"`, ""},
		"an error envelope":        {`{"error":{"code":"invalid_request","message":"m"}}`, ""},
		"a fingerprint not a hash": {`{"requestFingerprint":"abc"}`, ""},
		"prev in upper case":       {string(decision), strings.Repeat("A", 64)},
		"prev too short":           {string(decision), "abc"},
	} {
		t.Run(name, func(t *testing.T) {
			if r, err := s.Sign([]byte(c.response), c.prev); err == nil {
				t.Fatalf("Sign returned %s and no error", r.Marshal())
			}
		})
	}
}

// TestParseRefuses: Parse names the member a malformed receipt gets
// wrong.
func TestParseRefuses(t *testing.T) {
	s := testSigner(t, "signer")
	good := sign(t, s, answer(t, receipt.KindDecision, decideRequest), "")
	wire := string(good.Marshal())
	sig := wire[strings.Index(wire, `"sig":`):strings.Index(wire, `,"version"`)]
	tests := []struct{ name, data, wantIn string }{
		{"not JSON", `{"kid":`, "not JSON"},
		{"an array", `[]`, "object"},
		{"version 2", strings.Replace(wire, `"version":1`, `"version":2`, 1), "/version"},
		{"version 1.0", strings.Replace(wire, `"version":1`, `"version":1.0`, 1), "/version"},
		{"no version", strings.Replace(wire, `,"version":1`, ``, 1), "/version"},
		{"unknown member", strings.Replace(wire, `{`, `{"alg":"EdDSA",`, 1), "/alg"},
		{"both identities", strings.Replace(wire, `"requestFingerprint"`, `"requestHash":"`+strings.Repeat("a", 64)+`","requestFingerprint"`, 1), "exactly one"},
		{"neither identity", strings.Replace(wire, `"requestFingerprint"`, `"prev"`, 1), "exactly one"},
		{"short signature", strings.Replace(wire, sig, `"sig":"AAAA"`, 1), "/sig"},
		{"padded signature", strings.Replace(wire, sig, sig[:len(sig)-1]+`=="`, 1), "/sig"},
		{"no signature", strings.Replace(wire, sig+",", ``, 1), "/sig"},
		{"upper-case hex", strings.Replace(wire, good.RequestFingerprint, strings.ToUpper(good.RequestFingerprint), 1), "/requestFingerprint"},
		{"kid a number", strings.Replace(wire, `"kid":"`+good.KeyID+`"`, `"kid":7`, 1), "/kid"},
		{"empty kid", strings.Replace(wire, good.KeyID, ``, 1), "/kid"},
		{"duplicate member", strings.Replace(wire, `{`, `{"version":1,`, 1), "duplicate"},
		{"too long", `{"kid":"` + strings.Repeat("k", receipt.MaxSize) + `"}`, "bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := receipt.Parse([]byte(tt.data))
			if err == nil {
				t.Fatalf("Parse(%s) returned no error", tt.data)
			}
			if !strings.Contains(err.Error(), tt.wantIn) {
				t.Errorf("error %q does not mention %q", err, tt.wantIn)
			}
		})
	}
}

// TestCheckChain: a chain verifies in order; a dropped, reordered or
// replaced receipt breaks the link after it.
func TestCheckChain(t *testing.T) {
	s := testSigner(t, "signer")
	d := answer(t, receipt.KindDecision, decideRequest)
	c := answer(t, receipt.KindCheck, checkRequest)
	r0 := sign(t, s, d, "")
	r1 := sign(t, s, c, r0.Hash())
	r2 := sign(t, s, d, r1.Hash())
	if f := receipt.CheckChain("", []receipt.Receipt{r0, r1, r2}); len(f) != 0 {
		t.Fatalf("a good chain: %+v", f)
	}
	for name, tc := range map[string]struct {
		chain []receipt.Receipt
		paths []string
	}{
		"dropped":   {[]receipt.Receipt{r0, r2}, []string{"/1/prev"}},
		"reordered": {[]receipt.Receipt{r1, r0, r2}, []string{"/0/prev", "/1/prev", "/2/prev"}},
		"replaced":  {[]receipt.Receipt{r0, sign(t, s, d, r0.Hash()), r2}, []string{"/2/prev"}},
	} {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, f := range receipt.CheckChain("", tc.chain) {
				got = append(got, f.Path)
			}
			if diff := cmp.Diff(tc.paths, got); diff != "" {
				t.Errorf("broken links (-want +got):\n%s", diff)
			}
		})
	}
}
