package x402

import (
	"encoding/hex"
	"errors"
	"math/big"
	"strings"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/strictjson"
)

// The issue codes of a refused PAYMENT-SIGNATURE, in the details of its 400
// invalid_request answer; each detail's path is a JSON Pointer into the
// header's decoded JSON. A missing, ill-typed or ill-formed payer or nonce
// uses preflight's [preflight.IssueRequired], [preflight.IssueType] and
// [preflight.IssuePattern].
const (
	// IssueMemberCase: a member name differs only in letter case from one
	// the protocol or the exact scheme defines at that place ("Nonce" for
	// "nonce"). A case-insensitive reader would take it for that member.
	IssueMemberCase preflight.IssueCode = "member_case"
	// IssueAuthorizationConflict: the payload carries both authorization
	// (EIP-3009) and permit2Authorization (Permit2); facilitators differ on
	// which one they would settle.
	IssueAuthorizationConflict preflight.IssueCode = "authorization_conflict"
)

// payloadError refuses a PAYMENT-SIGNATURE because of one member.
type payloadError struct {
	path string              // JSON Pointer into the header's JSON
	code preflight.IssueCode // one of the Issue constants
	msg  string              // what was expected and what was found
}

func (e *payloadError) Error() string { return "header JSON at " + e.path + ": " + e.msg }

// issue returns e as a detail of the error envelope.
func (e *payloadError) issue() preflight.Issue {
	return preflight.Issue{Path: e.path, Code: e.code, Message: e.msg}
}

// paymentID is what makes a payment unique on chain: the token contract (or
// Permit2) accepts each (payer, nonce) once. Addresses and nonces are
// values, not text: "0xAB…" and "0xab…" are the same.
type paymentID struct {
	network string   // CAIP-2, exactly as in accepted.network
	asset   string   // accepted.asset in ASCII lower case
	payer   [20]byte // authorization.from or permit2Authorization.from
	nonce   [32]byte // bytes32 (EIP-3009) or uint256 big-endian (Permit2)
}

// The member names the exact scheme defines inside payload, at each level
// (x402 exact EVM: ExactEIP3009Payload and ExactPermit2Payload).
var (
	payloadNames       = []string{"signature", "authorization", "permit2Authorization"}
	eip3009Names       = []string{"from", "to", "value", "validAfter", "validBefore", "nonce"}
	permit2Names       = []string{"from", "permitted", "spender", "nonce", "deadline", "witness"}
	permit2Permitted   = []string{"token", "amount"}
	permit2WitnessName = []string{"to", "validAfter"}
)

// readPayment reads the payer and nonce of p's exact-scheme payload as a
// facilitator will, refusing what a facilitator might read differently: a
// member whose name differs only in letter case from one the scheme
// defines (at every level), both authorization and permit2Authorization,
// and a payer or nonce not in the one form the scheme defines (address: 0x
// and 40 hex digits; EIP-3009 nonce: 0x and 64 hex digits; Permit2 nonce:
// a decimal uint256 without leading zeros). Hex digits may be in either
// case. Pointers start at the header's root.
func readPayment(p PaymentPayload) (paymentID, error) {
	tree, err := strictjson.Parse(p.Payload, strictjson.Limits{MaxDepth: maxHeaderDepth})
	if err != nil { // the header was parsed strictly before; unreachable
		return paymentID{}, &payloadError{"/payload", preflight.IssueInvalidJSON, "payload is not JSON"}
	}
	const at = "/payload"
	if err := checkNames(tree, at, payloadNames); err != nil {
		return paymentID{}, err
	}
	eip, okEIP := tree.Get("authorization")
	p2, okP2 := tree.Get("permit2Authorization")
	var auth strictjson.Value
	var name string
	var names []string
	switch {
	case okEIP && okP2:
		return paymentID{}, &payloadError{at + "/permit2Authorization", IssueAuthorizationConflict,
			"payload carries both authorization (EIP-3009) and permit2Authorization (Permit2); want exactly one"}
	case okEIP:
		auth, name, names = eip, "authorization", eip3009Names
	case okP2:
		auth, name, names = p2, "permit2Authorization", permit2Names
	default:
		return paymentID{}, &payloadError{at + "/authorization", preflight.IssueRequired,
			"payload has neither authorization (EIP-3009) nor permit2Authorization (Permit2); want one of them"}
	}
	at2 := at + "/" + name
	if auth.Kind() != strictjson.Object {
		return paymentID{}, &payloadError{at2, preflight.IssueType, name + " is a JSON " + auth.Kind().String() + "; want an object"}
	}
	if err := checkNames(auth, at2, names); err != nil {
		return paymentID{}, err
	}
	if okP2 {
		for _, sub := range []struct {
			name  string
			names []string
		}{{"permitted", permit2Permitted}, {"witness", permit2WitnessName}} {
			if v, ok := auth.Get(sub.name); ok {
				if err := checkNames(v, at2+"/"+sub.name, sub.names); err != nil {
					return paymentID{}, err
				}
			}
		}
	}

	id := paymentID{network: p.Accepted.Network, asset: asciiLower(p.Accepted.Asset)}
	from, err := member(auth, at2, "from")
	if err != nil {
		return paymentID{}, err
	}
	if !hexBytes(id.payer[:], from.Str()) {
		return paymentID{}, &payloadError{at2 + "/from", preflight.IssuePattern, "from is not an address; want 0x and 40 hex digits"}
	}
	nonce, err := member(auth, at2, "nonce")
	if err != nil {
		return paymentID{}, err
	}
	if okEIP && !hexBytes(id.nonce[:], nonce.Str()) {
		return paymentID{}, &payloadError{at2 + "/nonce", preflight.IssuePattern, "nonce is not a bytes32; want 0x and 64 hex digits"}
	}
	if okP2 && !decimalUint256(id.nonce[:], nonce.Str()) {
		return paymentID{}, &payloadError{at2 + "/nonce", preflight.IssuePattern, "nonce is not a uint256; want decimal digits without leading zeros, below 2^256"}
	}
	return id, nil
}

// checkNames refuses a member of obj (when it is an object) whose name
// differs from one of names only in letter case, with strings.EqualFold's
// folding (encoding/json's, Kelvin sign and long s included). at is obj's
// JSON Pointer.
func checkNames(obj strictjson.Value, at string, names []string) error {
	if obj.Kind() != strictjson.Object {
		return nil
	}
	for it := obj.Iter(); it.Next(); {
		key := it.Key()
		for _, name := range names {
			if key != name && strings.EqualFold(key, name) {
				return caseError(at+"/"+strictjson.EscapePointerToken(key), name)
			}
		}
	}
	return nil
}

func caseError(path, name string) *payloadError {
	return &payloadError{path, IssueMemberCase, "member name differs from \"" + name + "\" only in letter case"}
}

// member returns obj's string member name, or the refusal.
func member(obj strictjson.Value, at, name string) (strictjson.Value, error) {
	v, ok := obj.Get(name)
	if !ok {
		return v, &payloadError{at + "/" + name, preflight.IssueRequired, name + " is missing"}
	}
	if v.Kind() != strictjson.String {
		return v, &payloadError{at + "/" + name, preflight.IssueType, name + " is a JSON " + v.Kind().String() + "; want a string"}
	}
	return v, nil
}

// hexBytes fills dst from s, "0x" and exactly 2*len(dst) hex digits of
// either case, and reports whether s had that form.
func hexBytes(dst []byte, s string) bool {
	if len(s) != 2+2*len(dst) || s[0] != '0' || s[1] != 'x' {
		return false
	}
	_, err := hex.Decode(dst, []byte(s[2:]))
	return err == nil
}

// maxUint256 is 2^256 - 1.
var maxUint256 = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))

// decimalUint256 fills dst (32 bytes) with the big-endian value of s, a
// decimal uint256 in canonical form ("0", or digits not starting with 0),
// and reports whether s had that form.
func decimalUint256(dst []byte, s string) bool {
	if s == "" || len(s) > 78 || (s[0] == '0' && len(s) > 1) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	n, ok := new(big.Int).SetString(s, 10)
	if !ok || n.Cmp(maxUint256) > 0 {
		return false
	}
	n.FillBytes(dst)
	return true
}

// asciiLower lowers ASCII letters only: hex addresses compare without case,
// and no other letter folds into a hex digit.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// issues returns the detail of a decodePayload error that names a member,
// or nil.
func issues(err error) []preflight.Issue {
	var pe *payloadError
	if errors.As(err, &pe) {
		return []preflight.Issue{pe.issue()}
	}
	return nil
}
