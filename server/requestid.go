package server

import (
	"crypto/rand"
	"encoding/hex"
)

// headerRequestID names the request id header: read from a request when its
// value is sane, always set on the response.
const headerRequestID = "X-Request-Id"

// maxRequestIDLen bounds an incoming request id that is honoured.
const maxRequestIDLen = 128

// requestID returns the incoming id when it is sane (1 to 128 bytes of
// letters, digits and - _ . : + / =, so it is safe in a log line and a
// header), else a fresh random 128-bit id in lower-case hex.
func requestID(incoming string) string {
	if saneRequestID(incoming) {
		return incoming
	}
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand panics instead)
	return hex.EncodeToString(b[:])
}

func saneRequestID(s string) bool {
	if len(s) == 0 || len(s) > maxRequestIDLen {
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
