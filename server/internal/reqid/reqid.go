// Package reqid gives each HTTP request an id, shared by preflightd's
// reference server and its MCP guarding proxy: an incoming X-Request-Id
// that is safe to log is kept, any other is replaced by a random one.
package reqid

import "math/rand/v2"

// Header names the request id header: read from a request when its value
// is sane, always set on the response.
const Header = "X-Request-Id"

// MaxLen bounds an incoming request id that is honoured.
const MaxLen = 128

// New returns the incoming id when it is sane (1 to 128 bytes of letters,
// digits and - _ . : + / =, so it is safe in a log line and a header),
// else a fresh random 128-bit id in lower-case hex.
//
// The random bits come from math/rand/v2's top-level generator (ChaCha8,
// per thread, seeded by the runtime from the operating system), not from
// crypto/rand: an id only has to be unique, never secret (a client may
// choose its own), and this costs no system call and one allocation.
func New(incoming string) string {
	if Sane(incoming) {
		return incoming
	}
	const digits = "0123456789abcdef"
	var b [32]byte
	for i, v := range [2]uint64{rand.Uint64(), rand.Uint64()} {
		for j := range 16 {
			b[i*16+j] = digits[v>>(60-4*j)&0xf]
		}
	}
	return string(b[:])
}

// Sane reports whether s may be used as a request id as it is.
func Sane(s string) bool {
	if len(s) == 0 || len(s) > MaxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '-', c == '_', c == '.', c == ':', c == '+', c == '/', c == '=':
		default:
			return false
		}
	}
	return true
}
