package x402

import (
	"encoding/hex"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// keyNonce starts with a zero byte, so that a short spelling of it exists.
const keyNonce = "0x00ab12cd34ef56ab78cd90ef12ab34cd56ef78ab90cd12ef34ab56cd78ef90ab"

var (
	keyAccepted = func() string { b, _ := json.Marshal(offer); return string(b) }()
	keySig      = `"signature":"0x` + strings.Repeat("cd", 65) + `"`
	// keyAuth are the members of the EIP-3009 authorization of the payment
	// every spelling below denotes.
	keyAuth = `"from":"` + testPayer + `","to":"` + testPayTo + `","value":"2000","validAfter":"0","validBefore":"9999999999","nonce":"` + keyNonce + `"`
	// keyNonceDecimal is keyNonce as a Permit2 (uint256 decimal) nonce.
	keyNonceDecimal = func() string { n, _ := new(big.Int).SetString(keyNonce[2:], 16); return n.String() }()
	// keyPermit2 are the members of a Permit2 authorization by the same payer
	// with the same nonce.
	keyPermit2 = `"from":"` + testPayer + `","permitted":{"token":"` + offer.Asset + `","amount":"2000"},"spender":"0x4020615294c913f045dc10f0a5cdebd86c280001","nonce":"` + keyNonceDecimal + `","deadline":"9999999999","witness":{"to":"` + testPayTo + `","validAfter":"0"}`
)

// eipDoc is a payment header's JSON whose authorization holds members.
func eipDoc(members string) string {
	return `{"x402Version":2,"accepted":` + keyAccepted + `,"payload":{` + keySig + `,"authorization":{` + members + `}}}`
}

// payloadDoc is a payment header's JSON whose payload holds members.
func payloadDoc(members string) string {
	return `{"x402Version":2,"accepted":` + keyAccepted + `,"payload":{` + members + `}}`
}

// permit2Doc is a payment header's JSON whose permit2Authorization holds
// members.
func permit2Doc(members string) string {
	return payloadDoc(keySig + `,"permit2Authorization":{` + members + `}`)
}

func TestDecodePaymentRefusals(t *testing.T) {
	issue := func(path string, code preflight.IssueCode) []preflight.Issue {
		return []preflight.Issue{{Path: path, Code: code}}
	}
	tests := []struct {
		name string
		doc  string
		want []preflight.Issue // nil: accepted
	}{
		{"EIP-3009 payment", eipDoc(keyAuth), nil},
		{"Permit2 payment", permit2Doc(keyPermit2), nil},
		{"unknown members are ignored", payloadDoc(keySig + `,"authorization":{` + keyAuth + `,"nonces":"x","nonce_":1},"authorizations":{}`), nil},
		{"Permit2 nonce 0", permit2Doc(strings.Replace(keyPermit2, keyNonceDecimal, "0", 1)), nil},
		{"Permit2 nonce 2^256-1", permit2Doc(strings.Replace(keyPermit2, keyNonceDecimal, maxUint256.String(), 1)), nil},

		// Case variants of the protocol's members (checked by DecodeHeader).
		{"X402VERSION at the top", `{"X402VERSION":2,"accepted":` + keyAccepted + `,"payload":{}}`, issue("/X402VERSION", IssueMemberCase)},
		{"Payload beside payload", `{"x402Version":2,"accepted":` + keyAccepted + `,"payload":{` + keySig + `,"authorization":{` + keyAuth + `}},"Payload":{}}`, issue("/Payload", IssueMemberCase)},
		{"PayTo in accepted", strings.Replace(eipDoc(keyAuth), `"payTo"`, `"PayTo"`, 1), issue("/accepted/PayTo", IssueMemberCase)},

		// Case variants inside payload, at every level the scheme defines.
		{"Signature", payloadDoc(`"Signature":"0x01","authorization":{` + keyAuth + `}`), issue("/payload/Signature", IssueMemberCase)},
		{"signature with a long s (U+017F)", payloadDoc(`"ſignature":"0x01","authorization":{` + keyAuth + `}`), issue("/payload/ſignature", IssueMemberCase)},
		{"Authorization alone", payloadDoc(keySig + `,"Authorization":{` + keyAuth + `}`), issue("/payload/Authorization", IssueMemberCase)},
		{"AUTHORIZATION after authorization", payloadDoc(keySig + `,"authorization":{` + keyAuth + `},"AUTHORIZATION":{}`), issue("/payload/AUTHORIZATION", IssueMemberCase)},
		{"Permit2Authorization", payloadDoc(keySig + `,"Permit2Authorization":{` + keyPermit2 + `}`), issue("/payload/Permit2Authorization", IssueMemberCase)},
		{"Nonce for nonce", eipDoc(strings.Replace(keyAuth, `"nonce"`, `"Nonce"`, 1)), issue("/payload/authorization/Nonce", IssueMemberCase)},
		{"nOnCe for nonce", eipDoc(strings.Replace(keyAuth, `"nonce"`, `"nOnCe"`, 1)), issue("/payload/authorization/nOnCe", IssueMemberCase)},
		{"escaped N in Nonce", eipDoc(strings.Replace(keyAuth, `"nonce"`, `"\u004eonce"`, 1)), issue("/payload/authorization/Nonce", IssueMemberCase)},
		{"nonce then Nonce", eipDoc(keyAuth + `,"Nonce":"0x` + strings.Repeat("77", 32) + `"`), issue("/payload/authorization/Nonce", IssueMemberCase)},
		{"Nonce then nonce", eipDoc(`"Nonce":"0x` + strings.Repeat("77", 32) + `",` + keyAuth), issue("/payload/authorization/Nonce", IssueMemberCase)},
		{"From", eipDoc(strings.Replace(keyAuth, `"from"`, `"From"`, 1)), issue("/payload/authorization/From", IssueMemberCase)},
		{"To", eipDoc(strings.Replace(keyAuth, `"to"`, `"To"`, 1)), issue("/payload/authorization/To", IssueMemberCase)},
		{"VALUE", eipDoc(strings.Replace(keyAuth, `"value"`, `"VALUE"`, 1)), issue("/payload/authorization/VALUE", IssueMemberCase)},
		{"validafter", eipDoc(strings.Replace(keyAuth, `"validAfter"`, `"validafter"`, 1)), issue("/payload/authorization/validafter", IssueMemberCase)},
		{"ValidBefore", eipDoc(strings.Replace(keyAuth, `"validBefore"`, `"ValidBefore"`, 1)), issue("/payload/authorization/ValidBefore", IssueMemberCase)},
		{"Permit2 From", permit2Doc(strings.Replace(keyPermit2, `"from"`, `"From"`, 1)), issue("/payload/permit2Authorization/From", IssueMemberCase)},
		{"Permit2 NONCE", permit2Doc(strings.Replace(keyPermit2, `"nonce"`, `"NONCE"`, 1)), issue("/payload/permit2Authorization/NONCE", IssueMemberCase)},
		{"Permit2 Spender", permit2Doc(strings.Replace(keyPermit2, `"spender"`, `"Spender"`, 1)), issue("/payload/permit2Authorization/Spender", IssueMemberCase)},
		{"Permit2 Deadline", permit2Doc(strings.Replace(keyPermit2, `"deadline"`, `"Deadline"`, 1)), issue("/payload/permit2Authorization/Deadline", IssueMemberCase)},
		{"Permit2 Permitted", permit2Doc(strings.Replace(keyPermit2, `"permitted"`, `"Permitted"`, 1)), issue("/payload/permit2Authorization/Permitted", IssueMemberCase)},
		{"Permit2 Witness", permit2Doc(strings.Replace(keyPermit2, `"witness"`, `"Witness"`, 1)), issue("/payload/permit2Authorization/Witness", IssueMemberCase)},
		{"Permit2 permitted Token", permit2Doc(strings.Replace(keyPermit2, `"token"`, `"Token"`, 1)), issue("/payload/permit2Authorization/permitted/Token", IssueMemberCase)},
		{"Permit2 permitted token with a Kelvin sign (U+212A)", permit2Doc(strings.Replace(keyPermit2, `"token"`, `"to`+"\u212a"+`en"`, 1)), issue("/payload/permit2Authorization/permitted/to\u212aen", IssueMemberCase)},
		{"Permit2 permitted AMOUNT", permit2Doc(strings.Replace(keyPermit2, `"amount"`, `"AMOUNT"`, 1)), issue("/payload/permit2Authorization/permitted/AMOUNT", IssueMemberCase)},
		{"Permit2 witness To", permit2Doc(strings.Replace(keyPermit2, `{"to"`, `{"To"`, 1)), issue("/payload/permit2Authorization/witness/To", IssueMemberCase)},
		{"Permit2 witness ValidAfter", permit2Doc(strings.Replace(keyPermit2, `"validAfter"`, `"ValidAfter"`, 1)), issue("/payload/permit2Authorization/witness/ValidAfter", IssueMemberCase)},

		// Both authorizations.
		{"authorization and permit2Authorization", payloadDoc(keySig + `,"authorization":{` + keyAuth + `},"permit2Authorization":{` + keyPermit2 + `}`), issue("/payload/permit2Authorization", IssueAuthorizationConflict)},
		{"permit2Authorization first", payloadDoc(`"permit2Authorization":{` + keyPermit2 + `},` + keySig + `,"authorization":{` + keyAuth + `}`), issue("/payload/permit2Authorization", IssueAuthorizationConflict)},
		{"authorization and a null permit2Authorization", payloadDoc(keySig + `,"authorization":{` + keyAuth + `},"permit2Authorization":null`), issue("/payload/permit2Authorization", IssueAuthorizationConflict)},

		// Payer and nonce the key cannot be built from.
		{"no authorization", payloadDoc(keySig), issue("/payload/authorization", preflight.IssueRequired)},
		{"authorization not an object", payloadDoc(keySig + `,"authorization":"x"`), issue("/payload/authorization", preflight.IssueType)},
		{"permit2Authorization null", payloadDoc(keySig + `,"permit2Authorization":null`), issue("/payload/permit2Authorization", preflight.IssueType)},
		{"no from", eipDoc(strings.Replace(keyAuth, `"from":"`+testPayer+`",`, "", 1)), issue("/payload/authorization/from", preflight.IssueRequired)},
		{"from a number", eipDoc(strings.Replace(keyAuth, `"`+testPayer+`"`, "1", 1)), issue("/payload/authorization/from", preflight.IssueType)},
		{"from without 0x", eipDoc(strings.Replace(keyAuth, testPayer, testPayer[2:], 1)), issue("/payload/authorization/from", preflight.IssuePattern)},
		{"from with 0X", eipDoc(strings.Replace(keyAuth, testPayer, "0X"+testPayer[2:], 1)), issue("/payload/authorization/from", preflight.IssuePattern)},
		{"from with 39 digits", eipDoc(strings.Replace(keyAuth, testPayer, testPayer[:41], 1)), issue("/payload/authorization/from", preflight.IssuePattern)},
		{"from with 41 digits", eipDoc(strings.Replace(keyAuth, testPayer, testPayer+"0", 1)), issue("/payload/authorization/from", preflight.IssuePattern)},
		{"no nonce", eipDoc(strings.Replace(keyAuth, `,"nonce":"`+keyNonce+`"`, "", 1)), issue("/payload/authorization/nonce", preflight.IssueRequired)},
		{"nonce null", eipDoc(strings.Replace(keyAuth, `"`+keyNonce+`"`, "null", 1)), issue("/payload/authorization/nonce", preflight.IssueType)},
		{"nonce without its zero byte", eipDoc(strings.Replace(keyAuth, keyNonce, "0x"+keyNonce[4:], 1)), issue("/payload/authorization/nonce", preflight.IssuePattern)},
		{"nonce with 65 digits", eipDoc(strings.Replace(keyAuth, keyNonce, keyNonce+"0", 1)), issue("/payload/authorization/nonce", preflight.IssuePattern)},
		{"nonce with a g", eipDoc(strings.Replace(keyAuth, keyNonce, keyNonce[:65]+"g", 1)), issue("/payload/authorization/nonce", preflight.IssuePattern)},
		{"nonce with a space", eipDoc(strings.Replace(keyAuth, keyNonce, " "+keyNonce, 1)), issue("/payload/authorization/nonce", preflight.IssuePattern)},
		{"nonce as decimal", eipDoc(strings.Replace(keyAuth, keyNonce, keyNonceDecimal, 1)), issue("/payload/authorization/nonce", preflight.IssuePattern)},
		{"Permit2 nonce in hex", permit2Doc(strings.Replace(keyPermit2, keyNonceDecimal, keyNonce, 1)), issue("/payload/permit2Authorization/nonce", preflight.IssuePattern)},
		{"Permit2 nonce with a leading zero", permit2Doc(strings.Replace(keyPermit2, keyNonceDecimal, "0"+keyNonceDecimal, 1)), issue("/payload/permit2Authorization/nonce", preflight.IssuePattern)},
		{"Permit2 nonce negative", permit2Doc(strings.Replace(keyPermit2, keyNonceDecimal, "-1", 1)), issue("/payload/permit2Authorization/nonce", preflight.IssuePattern)},
		{"Permit2 nonce 2^256", permit2Doc(strings.Replace(keyPermit2, keyNonceDecimal, new(big.Int).Lsh(big.NewInt(1), 256).String(), 1)), issue("/payload/permit2Authorization/nonce", preflight.IssuePattern)},
		{"Permit2 nonce empty", permit2Doc(strings.Replace(keyPermit2, keyNonceDecimal, "", 1)), issue("/payload/permit2Authorization/nonce", preflight.IssuePattern)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !json.Valid([]byte(tc.doc)) {
				t.Fatalf("the test's JSON is invalid: %s", tc.doc)
			}
			_, _, err := decodePayload(b64(tc.doc))
			if (err == nil) != (tc.want == nil) {
				t.Fatalf("decodePayload error %v; want refused: %v", err, tc.want != nil)
			}
			if diff := cmp.Diff(tc.want, issues(err), cmpopts.IgnoreFields(preflight.Issue{}, "Message")); diff != "" {
				t.Errorf("details (-want +got):\n%s", diff)
			}
			if got := issues(err); len(got) == 1 && got[0].Message == "" {
				t.Error("the detail has no message")
			}
		})
	}
}

// TestPaymentKey: every spelling of one payment that decodes has the same
// key; a payment that differs in network, asset, payer or nonce has
// another.
func TestPaymentKey(t *testing.T) {
	indent := func(s string) string {
		var b strings.Builder
		var v any
		json.Unmarshal([]byte(s), &v)
		enc := json.NewEncoder(&b)
		enc.SetIndent("", "\t")
		enc.Encode(v)
		return b.String()
	}
	withAccepted := func(mut func(*PaymentRequirements)) string {
		o := offer
		mut(&o)
		b, _ := json.Marshal(o)
		return strings.Replace(eipDoc(keyAuth), keyAccepted, string(b), 1)
	}
	same := map[string]string{
		"canonical":                     eipDoc(keyAuth),
		"indented, members sorted":      indent(eipDoc(keyAuth)),
		"whitespace everywhere":         strings.NewReplacer(",", " ,\r\n\t", `":`, `" : `, "{", "{ ", "}", " }").Replace(eipDoc(keyAuth)),
		"top members reversed":          `{"payload":{` + keySig + `,"authorization":{` + keyAuth + `}},"accepted":` + keyAccepted + `,"x402Version":2}`,
		"payload members reversed":      payloadDoc(`"authorization":{` + keyAuth + `},` + keySig),
		"authorization reversed":        eipDoc(reverseMembers(keyAuth)),
		"escaped member names":          eipDoc(strings.NewReplacer(`"nonce"`, `"\u006eonce"`, `"from"`, `"fr\u006fm"`).Replace(keyAuth)),
		"escaped authorization name":    payloadDoc(keySig + `,"\u0061uthorization":{` + keyAuth + `}`),
		"escaped hex digits":            eipDoc(strings.Replace(keyAuth, keyNonce, `\u0030x00\u0041B`+keyNonce[6:], 1)),
		"payer in upper-case hex":       eipDoc(strings.Replace(keyAuth, testPayer, upper0x(testPayer), 1)),
		"nonce in upper-case hex":       eipDoc(strings.Replace(keyAuth, keyNonce, upper0x(keyNonce), 1)),
		"payer and nonce mixed case":    eipDoc(strings.NewReplacer(testPayer, "0x857B06519e91E3a54538791bDBb0e22373E36b66", keyNonce, "0x00Ab12cD34eF56aB78Cd90eF12aB34cD56eF78aB90cD12eF34aB56cD78eF90aB").Replace(keyAuth)),
		"asset in lower case":           withAccepted(func(o *PaymentRequirements) { o.Asset = strings.ToLower(o.Asset) }),
		"asset in upper-case hex":       withAccepted(func(o *PaymentRequirements) { o.Asset = upper0x(o.Asset) }),
		"another amount in accepted":    withAccepted(func(o *PaymentRequirements) { o.Amount = "1" }),
		"another signature":             strings.Replace(eipDoc(keyAuth), "cdcd", "abab", 1),
		"another validBefore":           eipDoc(strings.Replace(keyAuth, "9999999999", "1", 1)),
		"resource and extensions":       `{"x402Version":2,"resource":{"url":"http:\/\/x.example\/"},"accepted":` + keyAccepted + `,"payload":{` + keySig + `,"authorization":{` + keyAuth + `}},"extensions":{"a":[1]}}`,
		"unknown payload members":       payloadDoc(keySig + `,"note":"hi","authorization":{` + keyAuth + `,"extra":{}}`),
		"Permit2, same payer and nonce": permit2Doc(keyPermit2),
	}
	different := map[string]string{
		"another payer":          eipDoc(strings.Replace(keyAuth, testPayer, testPayer[:41]+"7", 1)),
		"another nonce":          eipDoc(strings.Replace(keyAuth, keyNonce, keyNonce[:65]+"c", 1)),
		"nonce shifted a byte":   eipDoc(strings.Replace(keyAuth, keyNonce, "0x"+keyNonce[4:]+"00", 1)),
		"another network":        withAccepted(func(o *PaymentRequirements) { o.Network = "eip155:84532" }),
		"another asset":          withAccepted(func(o *PaymentRequirements) { o.Asset = "0x036CbD53842c5426634e7929541eC2318f3dCF7e" }),
		"Permit2, another nonce": permit2Doc(strings.Replace(keyPermit2, keyNonceDecimal, "1", 1)),
	}
	key := func(t *testing.T, doc string) [32]byte {
		t.Helper()
		_, k, err := decodePayload(b64(doc))
		if err != nil {
			t.Fatalf("decodePayload(%s): %v", doc, err)
		}
		return k
	}
	base := key(t, eipDoc(keyAuth))
	var wantDiffer, gotDiffer []string
	for name, doc := range same {
		if key(t, doc) != base {
			gotDiffer = append(gotDiffer, name)
		}
	}
	for name, doc := range different {
		wantDiffer = append(wantDiffer, name)
		if key(t, doc) != base {
			gotDiffer = append(gotDiffer, name)
		}
	}
	if diff := cmp.Diff(wantDiffer, gotDiffer, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("spellings whose key differs from the canonical one's (-want +got):\n%s", diff)
	}
}

// TestMalformedPaymentEnvelope: a refused payload gets a 400
// invalid_request whose detail names the member, and reaches no
// facilitator.
func TestMalformedPaymentEnvelope(t *testing.T) {
	p, err := New(testConfig("http://127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	r := httptest.NewRequest("POST", testResource, nil)
	r.Header.Set(HeaderPaymentSignature, b64(eipDoc(strings.Replace(keyAuth, `"nonce"`, `"Nonce"`, 1))))
	p.Handle(rec, r, testResource, func() (int, []byte) { t.Error("produced"); return 200, nil })
	msg := "header JSON at /payload/authorization/Nonce: member name differs from \"nonce\" only in letter case"
	want, _ := json.Marshal(&preflight.Error{
		Code:    preflight.ErrorInvalidRequest,
		Message: "the PAYMENT-SIGNATURE header is malformed: " + msg + "; want padded standard base64 of a JSON PaymentPayload with x402Version 2, an accepted object and a payload object",
		Details: []preflight.Issue{{Path: "/payload/authorization/Nonce", Code: IssueMemberCase, Message: "member name differs from \"nonce\" only in letter case"}},
	})
	if rec.Code != http.StatusBadRequest {
		t.Errorf("status %d; want 400", rec.Code)
	}
	if diff := cmp.Diff(string(want), rec.Body.String()); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
}

// FuzzPaymentKey: decoding never panics; a decoded payment's key is a
// function of its (network, asset, payer, nonce) only (a header rebuilt
// from the four alone has the same key); and two decoded payments have
// equal keys exactly when their four-tuples are equal. The inputs are the
// headers' JSON.
func FuzzPaymentKey(f *testing.F) {
	f.Add(eipDoc(keyAuth), eipDoc(strings.Replace(keyAuth, keyNonce, upper0x(keyNonce), 1)))
	f.Add(eipDoc(keyAuth), permit2Doc(keyPermit2))
	f.Add(eipDoc(keyAuth), eipDoc(strings.Replace(keyAuth, `"nonce"`, `"Nonce"`, 1)))
	f.Add(payloadDoc(keySig+`,"authorization":{`+keyAuth+`},"permit2Authorization":{}`), eipDoc(reverseMembers(keyAuth)))
	f.Add(`{"x402Version":2,"accepted":{"network":"a\u0000b","asset":"c"},"payload":{"authorization":{"from":"`+testPayer+`","nonce":"`+keyNonce+`"}}}`,
		`{"x402Version":2,"accepted":{"network":"a","asset":"b\u0000c"},"payload":{"authorization":{"from":"`+testPayer+`","nonce":"`+keyNonce+`"}}}`)
	f.Add(`{}`, `[]`)
	f.Fuzz(func(t *testing.T, a, b string) {
		type decoded struct {
			id  paymentID
			key [32]byte
		}
		decode := func(doc string) (decoded, bool) {
			p, key, err := decodePayload(b64(doc))
			if err != nil {
				return decoded{}, false
			}
			id, err := readPayment(p)
			if err != nil {
				t.Fatalf("decodePayload accepted what readPayment refuses: %v", err)
			}
			return decoded{id, key}, true
		}
		da, okA := decode(a)
		db, okB := decode(b)
		for _, d := range []decoded{da, db} {
			if d == (decoded{}) {
				continue
			}
			network, _ := json.Marshal(d.id.network)
			asset, _ := json.Marshal(d.id.asset)
			rebuilt := `{"x402Version":2,"accepted":{"network":` + string(network) + `,"asset":` + string(asset) +
				`},"payload":{"authorization":{"from":"0x` + hex.EncodeToString(d.id.payer[:]) + `","nonce":"0x` + hex.EncodeToString(d.id.nonce[:]) + `"}}}`
			r, ok := decode(rebuilt)
			if !ok || r != d {
				t.Fatalf("rebuilt from its four-tuple, a payment decodes to %+v (ok %v); want %+v", r, ok, d)
			}
		}
		if okA && okB && (da.id == db.id) != (da.key == db.key) {
			t.Fatalf("tuples %+v and %+v: equal %v, keys equal %v", da.id, db.id, da.id == db.id, da.key == db.key)
		}
	})
}

func upper0x(s string) string { return "0x" + strings.ToUpper(s[2:]) }

func reverseMembers(members string) string {
	parts := strings.Split(members, ",")
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strings.Join(parts, ",")
}
