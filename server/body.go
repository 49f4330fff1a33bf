package server

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/strictjson"
)

// codedBody returns the first content coding other than identity that the
// Content-Encoding header fields of h list, and true; or "" and false when
// the body is as sent. The server decodes no coding, so a gzip body would
// otherwise be read as malformed JSON.
func codedBody(h http.Header) (string, bool) {
	for _, field := range h["Content-Encoding"] { // h.Values, the key already canonical
		for coding := range strings.SplitSeq(field, ",") {
			if coding = strings.TrimSpace(coding); coding != "" && !strings.EqualFold(coding, "identity") {
				return coding, true
			}
		}
	}
	return "", false
}

// MaxBodyBytes is the largest request body the POST routes accept. Larger
// bodies are answered 413 payload_too_large; the handler never reads more
// than MaxBodyBytes+1 bytes of a body.
const MaxBodyBytes = 65536

// isJSONMediaType reports whether a Content-Type value names JSON:
// application/json or any application/*+json type, parameters allowed.
func isJSONMediaType(contentType string) bool {
	if contentType == "application/json" {
		return true // the usual value, without ParseMediaType's allocations
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	if mt == "application/json" {
		return true
	}
	sub, ok := strings.CutPrefix(mt, "application/")
	return ok && len(sub) > len("+json") && strings.HasSuffix(sub, "+json")
}

// readBody reads the body of a POST to a JSON route: it refuses a
// Content-Type that is present and not JSON, then reads as readLimited
// does. On failure it returns the error to answer with.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, *preflight.Error) {
	if ct := headerValue(r.Header, "Content-Type"); ct != "" && !isJSONMediaType(ct) {
		return nil, &preflight.Error{
			Code:    ErrorUnsupportedMediaType,
			Message: fmt.Sprintf("Content-Type must be application/json (or an application/*+json type); got %q", ct),
		}
	}
	return readLimited(w, r)
}

// readLimited reads a request body for every POST route, /mcp included. It
// refuses a body with a content coding (see codedBody) and a declared
// Content-Length over the limit without reading, reads at most
// MaxBodyBytes+1 bytes of any body (chunked included), and answers a body
// that cannot be read completely (a broken or stalled connection) with
// invalid_json.
func readLimited(w http.ResponseWriter, r *http.Request) ([]byte, *preflight.Error) {
	if coding, ok := codedBody(r.Header); ok {
		// RFC 9110, section 15.5.16: say which codings would be accepted.
		w.Header().Set("Accept-Encoding", "identity")
		return nil, &preflight.Error{
			Code: ErrorUnsupportedContentEncoding,
			Message: "the body has Content-Encoding " + strconv.Quote(strictjson.Clip(coding)) +
				": send it uncompressed, with no Content-Encoding (or identity); nothing was evaluated",
		}
	}
	if r.ContentLength > MaxBodyBytes {
		// Do not read the body, and do not let the server drain it.
		w.Header().Set("Connection", "close")
		return nil, tooLarge()
	}
	var data []byte
	var err error
	if r.ContentLength >= 0 {
		// A declared length is at most MaxBodyBytes here, and net/http
		// never reads past it; the limit is kept for any other caller.
		data, err = readAll(r.Body, r.ContentLength)
	} else {
		// The limit reader is given the server's own writer, not a wrapper,
		// so that net/http learns the limit was hit and neither drains the
		// rest of the body before answering nor keeps the connection.
		data, err = readAll(http.MaxBytesReader(baseWriter(w), r.Body, MaxBodyBytes), -1)
	}
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			w.Header().Set("Connection", "close") // through every wrapper too
			return nil, tooLarge()
		}
		// The network error names socket addresses; the client needs only
		// to know that its body did not arrive. Every route and /mcp answer
		// this case alike: 400 invalid_json, a fixed message.
		return nil, &preflight.Error{
			Code:    preflight.ErrorInvalidJSON,
			Message: "the request body could not be read completely: the connection failed or the body did not arrive within the server's read timeout; nothing was evaluated",
		}
	}
	return data, nil
}

// tooLarge is the error of a body over MaxBodyBytes.
func tooLarge() *preflight.Error {
	return &preflight.Error{
		Code:    ErrorPayloadTooLarge,
		Message: fmt.Sprintf("the request body is larger than %d bytes", MaxBodyBytes),
	}
}

// readAll reads r to its end as io.ReadAll does. A declared length (0 to
// MaxBodyBytes; -1 when unknown) sizes the buffer, plus one byte, so a body
// that is as long as it says is read into one allocation; a body longer or
// shorter than declared is still read whole, and one read past
// MaxBodyBytes fails with a *http.MaxBytesError.
func readAll(r io.Reader, declared int64) ([]byte, error) {
	if declared < 0 || declared > MaxBodyBytes {
		return io.ReadAll(r)
	}
	b := make([]byte, 0, declared+1)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if len(b) > MaxBodyBytes {
			return nil, &http.MaxBytesError{Limit: MaxBodyBytes}
		}
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // let append grow it
		}
	}
}

// baseWriter returns the writer at the bottom of w's Unwrap chain: the
// server's own, whatever middleware wrapped it.
func baseWriter(w http.ResponseWriter) http.ResponseWriter {
	for {
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return w
		}
		w = u.Unwrap()
	}
}
