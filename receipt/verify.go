package receipt

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/strictjson"
)

// VerifyOptions adjusts [Verify]. The zero value (or nil) verifies against
// the built-in catalog and does not check a chain.
type VerifyOptions struct {
	// Catalog is the set of operations the signer decided with; nil means
	// preflight.DefaultCatalog(). It matters only for decisions.
	Catalog *preflight.Catalog
	// Prev, when not empty, is the hash of the receipt that must come
	// before this one in its chain: a receipt whose prev differs (or that
	// has none) gets a [FindingChain]. Empty means the chain is not checked.
	Prev string
}

// FindingCode names what a [Finding] is about.
type FindingCode string

// The codes of findings.
const (
	// FindingUnknownKey: no key given has the receipt's key id.
	FindingUnknownKey FindingCode = "unknown_key"
	// FindingSignature: the signature does not verify over the response
	// (the response, its identity or the receipt was changed, or another
	// key signed it).
	FindingSignature FindingCode = "signature"
	// FindingRequest: the request's recomputed requestHash or
	// requestFingerprint is not the one the receipt signs.
	FindingRequest FindingCode = "request"
	// FindingResponse: a member of the response differs from the answer
	// the library computes from the request.
	FindingResponse FindingCode = "response"
	// FindingChain: the receipt's prev is not the expected previous
	// receipt's hash.
	FindingChain FindingCode = "chain"
)

// Finding is one way in which a receipt, its response and its request do
// not agree.
type Finding struct {
	// Code says what kind of disagreement this is.
	Code FindingCode `json:"code"`
	// Path is a JSON Pointer to where it is: into the receipt
	// ("/receipt/sig") or into the response ("/response/decision").
	Path string `json:"path"`
	// Want is what it should be (the recomputed value, as canonical JSON;
	// "" when the member should be absent or does not apply).
	Want string `json:"want,omitempty"`
	// Got is what it is (canonical JSON; "" when the member is absent or
	// does not apply).
	Got string `json:"got,omitempty"`
	// Message says it in a sentence.
	Message string `json:"message"`
}

// Verification is what [Verify] found.
type Verification struct {
	// KeyID is the receipt's key id.
	KeyID string `json:"kid"`
	// Kind is the kind of answer the receipt signs.
	Kind Kind `json:"kind"`
	// Prev is the receipt's prev, empty when it is not chained.
	Prev string `json:"prev,omitempty"`
	// Hash is the receipt's own hash, for the next link of its chain.
	Hash string `json:"hash"`
	// Findings lists every disagreement; empty means the receipt is valid:
	// the key signed this response, and the library answers the request
	// with exactly this response.
	Findings []Finding `json:"findings"`
}

// OK reports whether nothing disagrees.
func (v *Verification) OK() bool { return len(v.Findings) == 0 }

// Verify checks a receipt offline: that a key of keys signed response
// under rc, that request (the body the answer was for: a check request or
// a tool-call request) has the receipt's requestHash or requestFingerprint,
// and that the library, run again on request, gives exactly response,
// member by member. Every disagreement is a [Finding]; Verify returns an
// error only when request cannot be evaluated (the library's
// *preflight.Error: the signer would have answered it with an error, not
// an answer) or response is not JSON.
//
// It reads no clock and no network.
func Verify(request, response []byte, rc Receipt, keys Keys, opts *VerifyOptions) (*Verification, error) {
	if opts == nil {
		opts = &VerifyOptions{}
	}
	v := &Verification{KeyID: rc.KeyID, Kind: rc.Kind(), Prev: rc.Prev, Hash: rc.Hash(), Findings: []Finding{}}
	add := func(code FindingCode, path, want, got, msg string) {
		v.Findings = append(v.Findings, Finding{Code: code, Path: path, Want: want, Got: got, Message: msg})
	}

	// The signature.
	msg, err := rc.SignedBytes(response)
	if err != nil {
		return nil, err
	}
	if pub, ok := keys[rc.KeyID]; !ok {
		add(FindingUnknownKey, "/receipt/kid", "", quote(rc.KeyID), "no key given has this key id, so the signature cannot be checked; give the signer's key set")
	} else if !ed25519.Verify(pub, msg, rc.Signature) {
		add(FindingSignature, "/receipt/sig", "", "", "the signature does not verify: the response or the receipt was changed after signing, or another key signed it")
	}

	// The chain.
	if opts.Prev != "" && opts.Prev != rc.Prev {
		add(FindingChain, "/receipt/prev", quote(opts.Prev), quoteOpt(rc.Prev), "the receipt does not follow the previous receipt of its chain")
	}

	// The recomputation.
	var again any
	var id string
	if rc.Kind() == KindCheck {
		res, err := preflight.CheckJSON(request)
		if err != nil {
			return nil, fmt.Errorf("receipt: the request is not a check request the library can evaluate: %w", err)
		}
		again, id = res, res.RequestHash
	} else {
		dec, err := opts.Catalog.DecideJSON(request)
		if err != nil {
			return nil, fmt.Errorf("receipt: the request is not a tool-call request the library can evaluate: %w", err)
		}
		again, id = dec, dec.RequestFingerprint
	}
	if signed := rc.RequestHash + rc.RequestFingerprint; id != signed {
		path := "/receipt/requestFingerprint"
		if rc.Kind() == KindCheck {
			path = "/receipt/requestHash"
		}
		add(FindingRequest, path, quote(id), quote(signed), "the receipt was signed for another request")
	}
	want, err := json.Marshal(again)
	if err != nil {
		return nil, err
	}
	wv, err := strictjson.Parse(want, strictjson.Limits{})
	if err != nil {
		return nil, err
	}
	gv, err := strictjson.Parse(response, strictjson.Limits{})
	if err != nil {
		return nil, fmt.Errorf("receipt: the response is not JSON: %w", err)
	}
	diff("/response", wv, gv, func(path, w, g string) {
		add(FindingResponse, path, w, g, "the response differs from the answer the library computes for the request")
	})
	return v, nil
}

// CheckChain checks that receipts form one chain in the order given: each
// receipt's prev is the hash of the one before it, and the first's is
// first (empty for a chain that starts with it). It returns a finding per
// broken link, with the index of the receipt in its path ("/2/prev").
func CheckChain(first string, receipts []Receipt) []Finding {
	var out []Finding
	prev := first
	for i, r := range receipts {
		if r.Prev != prev {
			out = append(out, Finding{Code: FindingChain, Path: fmt.Sprintf("/%d/prev", i),
				Want: quoteOpt(prev), Got: quoteOpt(r.Prev), Message: "the receipt does not follow the one before it"})
		}
		prev = r.Hash()
	}
	return out
}

func quote(s string) string {
	b, _ := strictjson.AppendCanonicalString(nil, s)
	return string(b)
}

// quoteOpt quotes s, or gives "" (absent) for an empty s.
func quoteOpt(s string) string {
	if s == "" {
		return ""
	}
	return quote(s)
}

// diff reports, leaf by leaf, where got differs from want: each member of
// an object (in want's order, then got's extra members), each item of an
// array, and any other value by its canonical form. A value absent on one
// side is reported with "" on that side.
func diff(path string, want, got strictjson.Value, report func(path, want, got string)) {
	if want.IsValid() && got.IsValid() && want.Kind() == got.Kind() {
		switch want.Kind() {
		case strictjson.Object:
			var seen []string
			for it := want.Iter(); it.Next(); {
				m := it.Member()
				seen = append(seen, m.Key)
				g, _ := got.Get(m.Key)
				diff(path+"/"+strictjson.EscapePointerToken(m.Key), m.Value, g, report)
			}
			for it := got.Iter(); it.Next(); {
				if m := it.Member(); !slices.Contains(seen, m.Key) {
					diff(path+"/"+strictjson.EscapePointerToken(m.Key), strictjson.Value{}, m.Value, report)
				}
			}
			return
		case strictjson.Array:
			wi, gi := want.Iter(), got.Iter()
			for i := 0; ; i++ {
				wn, gn := wi.Next(), gi.Next()
				if !wn && !gn {
					return
				}
				var w, g strictjson.Value
				if wn {
					w = wi.Value()
				}
				if gn {
					g = gi.Value()
				}
				diff(fmt.Sprintf("%s/%d", path, i), w, g, report)
			}
		}
	}
	if w, g := canon(want), canon(got); w != g {
		report(path, w, g)
	}
}

// canon is v's canonical JSON, or "" for an absent value.
func canon(v strictjson.Value) string {
	if !v.IsValid() {
		return ""
	}
	b, err := strictjson.AppendCanonical(nil, v)
	if err != nil {
		return v.Raw()
	}
	return string(b)
}
