// Package receipt signs preflight's answers and checks them offline.
//
// A receipt is a detached Ed25519 signature over one answer of preflight (a
// check result or a tool-call decision) exactly as it was sent, bound to the
// request it answered by that answer's own identifier (requestHash of a
// check, requestFingerprint of a decision). Because preflight's answers are
// pure functions of their requests, an auditor holding the request, the
// answer and the receipt can do two things without a network or a server:
// check that the key named by the receipt signed this answer, and recompute
// the answer with the library and see, field by field, whether it is the
// one the request calls for ([Verify]).
//
// # The signed bytes
//
// The signature is over the RFC 8785 (JCS) canonical bytes of the object
//
//	{"kid": K, "prev": P, "requestFingerprint": F, "response": R, "version": 1}
//
// where R is the answer's JSON, "requestHash" takes the place of
// "requestFingerprint" for a check result, and "prev" is present only in a
// chained receipt. Nothing else is signed: no time, no nonce. The same
// answer signed by the same key for the same prev gives the same receipt,
// byte for byte (Ed25519 signatures are deterministic).
//
// # The receipt
//
// A receipt is that object without "response" and with the signature added
// as "sig" (the 64 signature bytes in unpadded base64url, RFC 4648 §5). Its
// wire form is its own canonical JSON, one line of ASCII, such as
//
//	{"kid":"…","requestHash":"…","sig":"…","version":1}
//
// A server sends it in the Preflight-Receipt response header ([Header]); an
// MCP result carries it as an object in _meta under [MetaKey]. It never
// travels inside the answer, whose schema admits no extra member. A guard
// that builds the request itself (agent/mcpguard, preflightd proxy) puts
// the request it decided and the decision beside the receipt, under
// [RequestMetaKey] and [ResponseMetaKey], since the caller saw neither.
//
// # Chains
//
// A receipt's hash ([Receipt.Hash]) is the hex SHA-256 of its wire form. A
// caller that wants the receipts of one run chained passes the hash of the
// previous receipt with the next request (the Preflight-Receipt-Prev
// request header, [PrevHeader], or _meta under [PrevMetaKey]); the next
// receipt signs it as "prev". A server stays stateless: it signs the hash
// it is given. Dropping, reordering or replacing a receipt of a chain
// breaks every link after it ([VerifyOptions].Prev, [CheckChain]).
//
// # Keys
//
// Signing keys are Ed25519. A key file is PEM: the first PRIVATE KEY block
// (PKCS#8, as "openssl genpkey -algorithm ed25519" writes it) is the key
// that signs; any further PRIVATE KEY or PUBLIC KEY (PKIX) blocks are
// earlier keys, published so that receipts they signed still verify
// ([ParseSigningKey]). A key id ("kid") is the RFC 7638 JWK thumbprint of
// the public key: unpadded base64url of the SHA-256 of
// {"crv":"Ed25519","kty":"OKP","x":X}. The public keys are published as a
// JSON Web Key Set ([Signer.KeysDocument]), the current key first.
//
// The package never reads a clock, a network or a random source; its
// functions are safe for concurrent use.
package receipt
