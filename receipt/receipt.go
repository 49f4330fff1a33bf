package receipt

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/agentpreflight/preflight/strictjson"
)

// Version is the receipt format version this package writes and reads.
const Version = 1

// Where receipts travel. A receipt never travels inside an answer: the
// answers' schemas admit no extra member.
const (
	// Header is the HTTP response header that carries the receipt of a
	// 200 answer, in its wire form.
	Header = "Preflight-Receipt"
	// PrevHeader is the HTTP request header that asks for a chained
	// receipt: the hash of the previous receipt of the run.
	PrevHeader = "Preflight-Receipt-Prev"
	// MetaKey is the _meta member of an MCP tool result that carries the
	// receipt, as a JSON object.
	MetaKey = "io.agentpreflight/receipt"
	// PrevMetaKey is the _meta member of an MCP tools/call's params that
	// asks for a chained receipt: the hash of the previous receipt.
	PrevMetaKey = "io.agentpreflight/receipt-prev"
	// RequestMetaKey and ResponseMetaKey are the _meta members that carry,
	// beside the receipt, the request decided and the decision signed,
	// where the caller never saw them: on the results of a guard that
	// builds the request itself from its ledger (agent/mcpguard, the MCP
	// proxy).
	RequestMetaKey  = "io.agentpreflight/receipt-request"
	ResponseMetaKey = "io.agentpreflight/receipt-response"
)

// MaxSize bounds the wire form of a receipt that [Parse] reads; a real one
// is about 260 bytes.
const MaxSize = 1024

// Receipt is a signature over one answer of preflight. Exactly one of
// RequestHash (a check result) and RequestFingerprint (a decision) is set.
type Receipt struct {
	// Version is the format version, [Version].
	Version int
	// KeyID names the signing key (see [KeyID]).
	KeyID string
	// RequestHash is the requestHash of the check result signed.
	RequestHash string
	// RequestFingerprint is the requestFingerprint of the decision signed.
	RequestFingerprint string
	// Prev is the hash of the previous receipt of a chain; empty when the
	// receipt is not chained.
	Prev string
	// Signature is the 64-byte Ed25519 signature.
	Signature []byte
}

// Kind is which kind of answer a receipt signs.
type Kind string

// The kinds of answer.
const (
	KindCheck    Kind = "check"    // a check result, identified by its requestHash
	KindDecision Kind = "decision" // a tool-call decision, identified by its requestFingerprint
)

// Kind says which kind of answer r signs.
func (r Receipt) Kind() Kind {
	if r.RequestHash != "" {
		return KindCheck
	}
	return KindDecision
}

// Marshal returns the receipt's wire form: its canonical JSON (members in
// RFC 8785 order, absent ones left out), one line of ASCII.
func (r Receipt) Marshal() []byte {
	b := make([]byte, 0, 256)
	b = append(b, `{"kid":`...)
	b, _ = strictjson.AppendCanonicalString(b, r.KeyID)
	b = r.appendIdentity(b)
	b = append(b, `,"sig":"`...)
	b = b64.AppendEncode(b, r.Signature)
	b = append(b, `","version":`...)
	b = fmt.Appendf(b, "%d}", r.Version)
	return b
}

// MarshalJSON returns the wire form, so that a Receipt placed in JSON (MCP
// _meta) is the object the wire form spells.
func (r Receipt) MarshalJSON() ([]byte, error) {
	if err := r.valid(); err != nil {
		return nil, err
	}
	return r.Marshal(), nil
}

// UnmarshalJSON reads the wire form as [Parse] does.
func (r *Receipt) UnmarshalJSON(data []byte) error {
	p, err := Parse(data)
	if err != nil {
		return err
	}
	*r = p
	return nil
}

// appendIdentity appends the members between "kid" and "response"/"sig":
// prev, then requestFingerprint or requestHash.
func (r Receipt) appendIdentity(b []byte) []byte {
	if r.Prev != "" {
		b = append(b, `,"prev":`...)
		b, _ = strictjson.AppendCanonicalString(b, r.Prev)
	}
	if r.RequestHash != "" {
		b = append(b, `,"requestHash":`...)
		b, _ = strictjson.AppendCanonicalString(b, r.RequestHash)
	} else {
		b = append(b, `,"requestFingerprint":`...)
		b, _ = strictjson.AppendCanonicalString(b, r.RequestFingerprint)
	}
	return b
}

// Hash returns the hex SHA-256 of the receipt's wire form: what the next
// receipt of a chain signs as its prev.
func (r Receipt) Hash() string {
	s := sha256.Sum256(r.Marshal())
	return hex.EncodeToString(s[:])
}

// SignedBytes returns the bytes the signature is over: the RFC 8785 form
// of {kid, prev, requestHash or requestFingerprint, response, version},
// where response is the answer's JSON, canonicalized here. It fails when
// response is not one JSON document.
func (r Receipt) SignedBytes(response []byte) ([]byte, error) {
	v, err := strictjson.Parse(response, strictjson.Limits{})
	if err != nil {
		return nil, fmt.Errorf("receipt: the response is not JSON: %w", err)
	}
	return r.signedBytes(v, len(response))
}

// signedBytes is SignedBytes of the parsed response v, whose text is
// about size bytes.
func (r Receipt) signedBytes(v strictjson.Value, size int) ([]byte, error) {
	var err error
	b := make([]byte, 0, size+256)
	b = append(b, `{"kid":`...)
	b, _ = strictjson.AppendCanonicalString(b, r.KeyID)
	b = r.appendIdentity(b)
	b = append(b, `,"response":`...)
	if b, err = strictjson.AppendCanonical(b, v); err != nil {
		return nil, err
	}
	b = fmt.Appendf(b, `,"version":%d}`, r.Version)
	return b, nil
}

// Parse reads a receipt's wire form strictly: one JSON object of at most
// [MaxSize] bytes with exactly the members version (1), kid, sig (64 bytes
// in unpadded base64url), one of requestHash and requestFingerprint, and
// optionally prev (each a SHA-256 in lower-case hex). Member order and
// white space are free; anything else is an error that names the member.
func Parse(data []byte) (Receipt, error) {
	var r Receipt
	if len(data) > MaxSize {
		return r, fmt.Errorf("receipt: %d bytes, over the %d a receipt may take", len(data), MaxSize)
	}
	v, err := strictjson.Parse(data, strictjson.Limits{MaxDepth: 2})
	if err != nil {
		return r, fmt.Errorf("receipt: not JSON: %w", err)
	}
	if v.Kind() != strictjson.Object {
		return r, fmt.Errorf("receipt: want a JSON object, found %s", v.Kind())
	}
	var sig string
	var haveVersion, haveSig bool
	for it := v.Iter(); it.Next(); {
		m := it.Member()
		str := func() (string, error) {
			if m.Value.Kind() != strictjson.String {
				return "", fmt.Errorf("receipt: /%s: want a string, found %s", strictjson.EscapePointerToken(m.Key), m.Value.Kind())
			}
			return m.Value.Str(), nil
		}
		switch m.Key {
		case "version":
			if m.Value.Kind() != strictjson.Number || m.Value.Raw() != "1" {
				return r, fmt.Errorf("receipt: /version: want 1, found %s", strictjson.Clip(m.Value.Raw()))
			}
			r.Version, haveVersion = Version, true
		case "kid":
			r.KeyID, err = str()
		case "sig":
			sig, err = str()
			haveSig = true
		case "requestHash":
			r.RequestHash, err = hexMember(m, str)
		case "requestFingerprint":
			r.RequestFingerprint, err = hexMember(m, str)
		case "prev":
			r.Prev, err = hexMember(m, str)
		default:
			err = fmt.Errorf("receipt: /%s: unknown member; a receipt has version, kid, prev, requestHash or requestFingerprint, and sig", strictjson.EscapePointerToken(strictjson.Clip(m.Key)))
		}
		if err != nil {
			return Receipt{}, err
		}
	}
	switch {
	case !haveVersion:
		return Receipt{}, errors.New("receipt: /version is missing")
	case r.KeyID == "":
		return Receipt{}, errors.New("receipt: /kid is missing or empty")
	case !haveSig:
		return Receipt{}, errors.New("receipt: /sig is missing")
	}
	if r.Signature, err = b64.DecodeString(sig); err != nil || len(r.Signature) != ed25519.SignatureSize {
		return Receipt{}, fmt.Errorf("receipt: /sig: want the %d signature bytes in unpadded base64url", ed25519.SignatureSize)
	}
	if err := r.valid(); err != nil {
		return Receipt{}, err
	}
	return r, nil
}

// valid checks what Marshal relies on.
func (r Receipt) valid() error {
	switch {
	case r.Version != Version:
		return fmt.Errorf("receipt: version %d; this package reads version %d", r.Version, Version)
	case r.KeyID == "":
		return errors.New("receipt: /kid is missing or empty")
	case (r.RequestHash == "") == (r.RequestFingerprint == ""):
		return errors.New("receipt: want exactly one of /requestHash and /requestFingerprint")
	case !isHash(r.RequestHash+r.RequestFingerprint) || (r.Prev != "" && !isHash(r.Prev)):
		return errors.New("receipt: requestHash, requestFingerprint and prev are SHA-256 hashes in lower-case hex")
	case len(r.Signature) != ed25519.SignatureSize:
		return fmt.Errorf("receipt: /sig: want %d signature bytes", ed25519.SignatureSize)
	}
	if _, ok := strictjson.AppendCanonicalString(nil, r.KeyID); !ok {
		return errors.New("receipt: /kid is not valid UTF-8")
	}
	return nil
}

// hexMember reads a member that holds a SHA-256 in lower-case hex.
func hexMember(m strictjson.Member, str func() (string, error)) (string, error) {
	s, err := str()
	if err == nil && !isHash(s) {
		err = fmt.Errorf("receipt: /%s: want 64 lower-case hex digits, found %q", m.Key, strictjson.Clip(s))
	}
	return s, err
}

// IsHash reports whether s is a SHA-256 in lower-case hex, the form of a
// receipt hash, a requestHash and a requestFingerprint.
func IsHash(s string) bool { return isHash(s) }

func isHash(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Sign signs response, the JSON of one answer exactly as it is sent (a
// check result or a tool-call decision, such as json.Marshal writes
// *preflight.CheckResult or *preflight.ToolCallDecision), and returns its
// receipt. The answer's requestHash or requestFingerprint member binds the
// receipt to its request. prev, when not empty, is the hash of the previous
// receipt of the run (see [Receipt.Hash]); it must be a SHA-256 in
// lower-case hex.
func (s *Signer) Sign(response []byte, prev string) (Receipt, error) {
	r := Receipt{Version: Version, KeyID: s.kid, Prev: prev}
	if prev != "" && !isHash(prev) {
		return Receipt{}, fmt.Errorf("receipt: the previous receipt's hash must be 64 lower-case hex digits, found %q", strictjson.Clip(prev))
	}
	v, err := strictjson.Parse(response, strictjson.Limits{})
	if err != nil {
		return Receipt{}, fmt.Errorf("receipt: the response is not JSON: %w", err)
	}
	if h, ok := v.Get("requestHash"); ok && h.Kind() == strictjson.String {
		r.RequestHash = h.Str()
	} else if f, ok := v.Get("requestFingerprint"); ok && f.Kind() == strictjson.String {
		r.RequestFingerprint = f.Str()
	}
	if !isHash(r.RequestHash + r.RequestFingerprint) {
		return Receipt{}, errors.New("receipt: the response is neither a check result (with requestHash) nor a decision (with requestFingerprint)")
	}
	msg, err := r.signedBytes(v, len(response))
	if err != nil {
		return Receipt{}, err
	}
	r.Signature = ed25519.Sign(s.priv, msg)
	return r, nil
}
