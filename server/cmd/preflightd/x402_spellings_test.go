package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/server/internal/x402"
)

// recordingFacilitator stands in for an x402 facilitator in front of the
// USDC contract: like the contract it settles each (payer, nonce) at most
// once, comparing the payer and nonce as values, and it reads the payment
// payload with encoding/json, whose member names match without letter case
// (as a Go facilitator's would). Settlement takes settleDelay. It counts
// every /verify and /settle call.
type recordingFacilitator struct {
	srv         *httptest.Server
	settleDelay time.Duration

	mu       sync.Mutex
	verifies int
	settles  int
	settled  map[string]bool // payer|nonce already settled
}

func newRecordingFacilitator(t *testing.T, settleDelay time.Duration) *recordingFacilitator {
	t.Helper()
	f := &recordingFacilitator{settleDelay: settleDelay, settled: map[string]bool{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *recordingFacilitator) counts() (verifies, settles int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.verifies, f.settles
}

type authFields struct {
	From  string `json:"from"`
	Nonce string `json:"nonce"`
}

func (f *recordingFacilitator) serve(w http.ResponseWriter, r *http.Request) {
	var call struct {
		PaymentPayload struct {
			Payload struct {
				Authorization        *authFields `json:"authorization"`
				Permit2Authorization *authFields `json:"permit2Authorization"`
			} `json:"payload"`
		} `json:"paymentPayload"`
	}
	json.NewDecoder(r.Body).Decode(&call)
	a := call.PaymentPayload.Payload.Authorization
	if a == nil {
		a = call.PaymentPayload.Payload.Permit2Authorization
	}
	if a == nil {
		a = &authFields{}
	}
	id := strings.ToLower(a.From) + "|" + nonceValue(a.Nonce)
	w.Header().Set("Content-Type", "application/json")
	const payer = `"payer":"` + spellingsPayer + `"`
	f.mu.Lock()
	switch r.URL.Path {
	case "/verify":
		f.verifies++
		used := f.settled[id]
		f.mu.Unlock()
		if used {
			io.WriteString(w, `{"isValid":false,"invalidReason":"invalid_exact_evm_nonce_already_used",`+payer+`}`)
			return
		}
		io.WriteString(w, `{"isValid":true,`+payer+`}`)
	case "/settle":
		f.settles++
		used := f.settled[id]
		f.settled[id] = true
		f.mu.Unlock()
		time.Sleep(f.settleDelay)
		if used {
			io.WriteString(w, `{"success":false,"errorReason":"invalid_exact_evm_nonce_already_used","transaction":"","network":"eip155:8453",`+payer+`}`)
			return
		}
		io.WriteString(w, `{"success":true,`+payer+`,"transaction":"0x`+strings.Repeat("ef", 32)+`","network":"eip155:8453"}`)
	default:
		f.mu.Unlock()
		http.NotFound(w, r)
	}
}

// nonceValue is the number a nonce denotes (0x hex or decimal), in decimal.
func nonceValue(s string) string {
	s = strings.ToLower(s)
	base := 10
	if strings.HasPrefix(s, "0x") {
		s, base = s[2:], 16
	}
	n, ok := new(big.Int).SetString(s, base)
	if !ok {
		return s
	}
	return n.String()
}

const (
	spellingsPayer = "0x857b06519e91e3a54538791bdbb0e22373e36b66"
	// spellingsNonce starts with a zero byte, so that a short spelling of
	// it exists.
	spellingsNonce = "0x00ab12cd34ef56ab78cd90ef12ab34cd56ef78ab90cd12ef34ab56cd78ef90ab"
)

// member is one JSON object member; v is raw JSON.
type member struct{ k, v string }

func object(sep string, ms ...member) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = `"` + m.k + `":` + m.v
	}
	return "{" + strings.Join(parts, ","+sep) + "}"
}

func quote(s string) string { return `"` + s + `"` }

func reversed(ms []member) []member {
	out := make([]member, len(ms))
	for i, m := range ms {
		out[len(ms)-1-i] = m
	}
	return out
}

// rename returns ms with the member named from renamed to, and any extra
// members appended.
func rename(ms []member, from, to string, extra ...member) []member {
	out := append([]member(nil), ms...)
	for i := range out {
		if out[i].k == from {
			out[i].k = to
		}
	}
	return append(out, extra...)
}

func replace(ms []member, k, v string) []member {
	out := append([]member(nil), ms...)
	for i := range out {
		if out[i].k == k {
			out[i].v = v
		}
	}
	return out
}

// TestPaymentSpellingsSettleOnce runs the built binary with payment through
// a recording facilitator whose settlement takes 1.5 s, and sends one
// payment at once in every spelling built below: whitespace, member order,
// escapes, letter case of hex digits, other signatures, the Permit2 shape
// with the same payer and nonce, and case-variant member names at every
// level, both authorizations, ill-formed payers and nonces. Every spelling
// is either refused as malformed (400 invalid_request with the detail's
// code and pointer listed below, no facilitator call) or is the same
// payment: exactly one is verified and settled (200), the others are
// refused as already in progress (402), so exactly one /verify and one
// /settle reach the facilitator.
func TestPaymentSpellingsSettleOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	fac := newRecordingFacilitator(t, 1500*time.Millisecond)
	d := startDaemon(t, buildBinary(t), "--pay-to", testPayTo, "--facilitator-url", fac.srv.URL)
	pw, err := x402.New(x402.Config{PayTo: testPayTo, FacilitatorURL: fac.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	offer := pw.Requirements()
	acceptedJSON := func(mut func(*x402.PaymentRequirements)) string {
		o := offer
		if mut != nil {
			mut(&o)
		}
		b, _ := json.Marshal(o)
		return string(b)
	}
	upperHex := func(s string) string { return "0x" + strings.ToUpper(s[2:]) }
	sig := quote("0x" + strings.Repeat("cd", 65))
	auth := []member{
		{"from", quote(spellingsPayer)}, {"to", quote(testPayTo)}, {"value", quote(offer.Amount)},
		{"validAfter", quote("0")}, {"validBefore", quote("9999999999")}, {"nonce", quote(spellingsNonce)},
	}
	pay := func(a []member, sep string) []member {
		return []member{{"signature", sig}, {"authorization", object(sep, a...)}}
	}
	top := func(payload []member, sep string) []member {
		return []member{{"x402Version", "2"}, {"accepted", acceptedJSON(nil)}, {"payload", object(sep, payload...)}}
	}
	doc := func(a []member) string { return object("", top(pay(a, ""), "")...) }
	otherNonce := quote("0x" + strings.Repeat("77", 32))
	nonceDecimal, _ := new(big.Int).SetString(spellingsNonce[2:], 16)
	permit2 := []member{
		{"from", quote(spellingsPayer)},
		{"permitted", object("", member{"token", quote(offer.Asset)}, member{"amount", quote(offer.Amount)})},
		{"spender", quote("0x4020615294c913f045dc10f0a5cdebd86c280001")},
		{"nonce", quote(nonceDecimal.String())},
		{"deadline", quote("9999999999")},
		{"witness", object("", member{"to", quote(testPayTo)}, member{"validAfter", quote("0")})},
	}
	permit2Doc := func(a []member) string {
		return object("", top([]member{{"signature", sig}, {"permit2Authorization", object("", a...)}}, "")...)
	}
	indented := func(s string) string {
		var b bytes.Buffer
		json.Indent(&b, []byte(s), "", "\t")
		return b.String()
	}

	type spelling struct {
		name string
		doc  string
		// refused: the detail code and pointer of the 400; "" for the same
		// payment (200 or 402 in flight).
		code, path string
	}
	canonical := doc(auth)
	spellings := []spelling{
		{name: "canonical", doc: canonical},
		{name: "indented with tabs", doc: indented(canonical)},
		{name: "spaces and CRLF", doc: strings.ReplaceAll(strings.ReplaceAll(canonical, ",", " ,\r\n "), `":`, `" : `)},
		{name: "top-level members reversed", doc: object("", reversed(top(pay(auth, ""), ""))...)},
		{name: "payload members reversed", doc: object("", top(reversed(pay(auth, "")), "")...)},
		{name: "authorization members reversed", doc: doc(reversed(auth))},
		{name: "payer in upper-case hex", doc: doc(replace(auth, "from", quote(upperHex(spellingsPayer))))},
		{name: "nonce in upper-case hex", doc: doc(replace(auth, "nonce", quote(upperHex(spellingsNonce))))},
		{name: "payer and nonce in mixed-case hex", doc: doc(replace(replace(auth, "from", quote("0x857B06519e91E3a54538791bDBb0e22373E36b66")), "nonce", quote("0x00Ab12cD34eF56aB78Cd90eF12aB34cD56eF78aB90cD12eF34aB56cD78eF90aB")))},
		{name: "accepted asset in lower case", doc: object("", replace(top(pay(auth, ""), ""), "accepted", acceptedJSON(func(o *x402.PaymentRequirements) { o.Asset = strings.ToLower(o.Asset) }))...)},
		{name: "accepted asset and payTo in upper-case hex", doc: object("", replace(top(pay(auth, ""), ""), "accepted", acceptedJSON(func(o *x402.PaymentRequirements) { o.Asset, o.PayTo = upperHex(o.Asset), upperHex(o.PayTo) }))...)},
		{name: "escaped member names", doc: doc(rename(rename(auth, "nonce", `\u006eonce`), "from", `\u0066rom`))},
		{name: "escaped authorization name", doc: object("", top(rename(pay(auth, ""), "authorization", `authori\u007aation`), "")...)},
		{name: "escaped hex digits in the nonce", doc: doc(replace(auth, "nonce", quote(`\u0030x00\u0061b`+spellingsNonce[6:])))},
		{name: "escaped solidus in the resource", doc: object("", append(top(pay(auth, ""), ""), member{"resource", `{"url":"http:\/\/preflight.example\/v0.2\/preflight\/tool-call"}`}, member{"extensions", "{}"})...)},
		{name: "another signature", doc: object("", top(replace(pay(auth, ""), "signature", quote("0x"+strings.Repeat("ab", 65))), "")...)},
		{name: "another validBefore", doc: doc(replace(auth, "validBefore", quote("9999999998")))},
		{name: "unknown payload member", doc: object("", top(append(pay(auth, ""), member{"note", `"hello"`}), "")...)},
		{name: "Permit2 shape, same payer and nonce", doc: permit2Doc(permit2)},

		{name: "Nonce for nonce", doc: doc(rename(auth, "nonce", "Nonce")), code: "member_case", path: "/payload/authorization/Nonce"},
		{name: "NONCE for nonce", doc: doc(rename(auth, "nonce", "NONCE")), code: "member_case", path: "/payload/authorization/NONCE"},
		{name: "escaped N in Nonce", doc: doc(rename(auth, "nonce", `\u004eonce`)), code: "member_case", path: "/payload/authorization/Nonce"},
		{name: "nonce and Nonce", doc: doc(append(auth, member{"Nonce", otherNonce})), code: "member_case", path: "/payload/authorization/Nonce"},
		{name: "Nonce before nonce", doc: doc(append([]member{{"Nonce", otherNonce}}, auth...)), code: "member_case", path: "/payload/authorization/Nonce"},
		{name: "From for from", doc: doc(rename(auth, "from", "From")), code: "member_case", path: "/payload/authorization/From"},
		{name: "from and FROM", doc: doc(append(auth, member{"FROM", quote("0x" + strings.Repeat("33", 20))})), code: "member_case", path: "/payload/authorization/FROM"},
		{name: "ValidBefore", doc: doc(rename(auth, "validBefore", "ValidBefore")), code: "member_case", path: "/payload/authorization/ValidBefore"},
		{name: "Authorization for authorization", doc: object("", top(rename(pay(auth, ""), "authorization", "Authorization"), "")...), code: "member_case", path: "/payload/Authorization"},
		{name: "authorization and AUTHORIZATION", doc: object("", top(append(pay(auth, ""), member{"AUTHORIZATION", object("", replace(auth, "nonce", otherNonce)...)}), "")...), code: "member_case", path: "/payload/AUTHORIZATION"},
		{name: "Signature", doc: object("", top(rename(pay(auth, ""), "signature", "Signature"), "")...), code: "member_case", path: "/payload/Signature"},
		{name: "signature with a long s", doc: object("", top(rename(pay(auth, ""), "signature", "\u017fignature"), "")...), code: "member_case", path: "/payload/\u017fignature"},
		{name: "Payload at the top", doc: object("", append(top(pay(auth, ""), ""), member{"Payload", "{}"})...), code: "member_case", path: "/Payload"},
		{name: "PayTo in accepted", doc: object("", replace(top(pay(auth, ""), ""), "accepted", strings.Replace(acceptedJSON(nil), `"payTo"`, `"PayTo"`, 1))...), code: "member_case", path: "/accepted/PayTo"},
		{name: "both authorizations", doc: object("", top(append(pay(auth, ""), member{"permit2Authorization", object("", permit2...)}), "")...), code: "authorization_conflict", path: "/payload/permit2Authorization"},
		{name: "authorization and a null permit2Authorization", doc: object("", top(append(pay(auth, ""), member{"permit2Authorization", "null"}), "")...), code: "authorization_conflict", path: "/payload/permit2Authorization"},
		{name: "Permit2 Nonce", doc: permit2Doc(rename(permit2, "nonce", "Nonce")), code: "member_case", path: "/payload/permit2Authorization/Nonce"},
		{name: "Permit2 permitted Token", doc: permit2Doc(replace(permit2, "permitted", object("", member{"Token", quote(offer.Asset)}, member{"amount", quote(offer.Amount)}))), code: "member_case", path: "/payload/permit2Authorization/permitted/Token"},
		{name: "Permit2 permitted token with a Kelvin sign", doc: permit2Doc(replace(permit2, "permitted", object("", member{"to\u212aen", quote(offer.Asset)}, member{"amount", quote(offer.Amount)}))), code: "member_case", path: "/payload/permit2Authorization/permitted/to\u212aen"},
		{name: "Permit2 witness ValidAfter", doc: permit2Doc(replace(permit2, "witness", object("", member{"to", quote(testPayTo)}, member{"ValidAfter", quote("0")}))), code: "member_case", path: "/payload/permit2Authorization/witness/ValidAfter"},
		{name: "Permit2 nonce with a leading zero", doc: permit2Doc(replace(permit2, "nonce", quote("0"+nonceDecimal.String()))), code: "pattern", path: "/payload/permit2Authorization/nonce"},
		{name: "Permit2 nonce in hex", doc: permit2Doc(replace(permit2, "nonce", quote(spellingsNonce))), code: "pattern", path: "/payload/permit2Authorization/nonce"},
		{name: "nonce without its leading zero byte", doc: doc(replace(auth, "nonce", quote("0x"+spellingsNonce[4:]))), code: "pattern", path: "/payload/authorization/nonce"},
		{name: "nonce with 0X", doc: doc(replace(auth, "nonce", quote("0X"+spellingsNonce[2:]))), code: "pattern", path: "/payload/authorization/nonce"},
		{name: "nonce with a space", doc: doc(replace(auth, "nonce", quote(" "+spellingsNonce))), code: "pattern", path: "/payload/authorization/nonce"},
		{name: "payer without 0x", doc: doc(replace(auth, "from", quote(spellingsPayer[2:]))), code: "pattern", path: "/payload/authorization/from"},
		{name: "nonce as a number", doc: doc(replace(auth, "nonce", "1")), code: "type", path: "/payload/authorization/nonce"},
		{name: "no authorization", doc: object("", top([]member{{"signature", sig}}, "")...), code: "required", path: "/payload/authorization"},
	}

	type answer struct {
		status   int
		code     string
		details  []map[string]string
		inFlight bool
	}
	answers := make([]answer, len(spellings))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, sp := range spellings {
		if !json.Valid([]byte(sp.doc)) {
			t.Fatalf("%s: the test built invalid JSON: %s", sp.name, sp.doc)
		}
		req, _ := http.NewRequest("POST", "http://"+d.addr+"/v0.2/preflight/tool-call", strings.NewReader(e2eToolAllow))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(x402.HeaderPaymentSignature, base64.StdEncoding.EncodeToString([]byte(sp.doc)))
		wg.Go(func() {
			<-start
			resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
			if err != nil {
				t.Errorf("%s: %v", sp.name, err)
				return
			}
			defer resp.Body.Close()
			var env struct {
				Error struct {
					Code    string              `json:"code"`
					Details []map[string]string `json:"details"`
				} `json:"error"`
			}
			json.NewDecoder(resp.Body).Decode(&env)
			a := answer{status: resp.StatusCode, code: env.Error.Code, details: env.Error.Details}
			if raw, err := base64.StdEncoding.DecodeString(resp.Header.Get(x402.HeaderPaymentRequired)); err == nil && len(raw) > 0 {
				var pr x402.PaymentRequired
				json.Unmarshal(raw, &pr)
				a.inFlight = pr.Error == x402.ReasonInFlight
			}
			answers[i] = a
		})
	}
	close(start)
	wg.Wait()

	paid, inFlight, refused := 0, 0, 0
	for i, sp := range spellings {
		a := answers[i]
		switch {
		case sp.code != "":
			if a.status == 400 {
				refused++
			}
			want := []map[string]string{{"code": sp.code, "path": sp.path}}
			var got []map[string]string
			for _, d := range a.details {
				got = append(got, map[string]string{"code": d["code"], "path": d["path"]})
			}
			if a.status != 400 || a.code != "invalid_request" || len(got) != 1 || got[0]["code"] != sp.code || got[0]["path"] != sp.path {
				t.Errorf("%s: %d %s %v; want 400 invalid_request with detail %v", sp.name, a.status, a.code, got, want)
			}
		case a.status == 200:
			paid++
		case a.status == 402 && a.inFlight:
			inFlight++
		default:
			t.Errorf("%s: %d %s (in flight %v); want 200, or 402 payment_already_in_progress", sp.name, a.status, a.code, a.inFlight)
		}
	}
	verifies, settles := fac.counts()
	t.Logf("%d spellings of one payment sent at once: %d refused as malformed (400), %d paid (200), %d refused as in flight (402); facilitator saw %d /verify and %d /settle",
		len(spellings), refused, paid, inFlight, verifies, settles)
	if paid != 1 || verifies != 1 || settles != 1 {
		t.Errorf("%d paid answers, %d /verify, %d /settle; want 1, 1 and 1", paid, verifies, settles)
	}
}
