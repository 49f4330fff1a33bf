package server

import (
	"net/http"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/receipt"
	"github.com/agentpreflight/preflight/strictjson"
)

// pathReceiptKeys serves the public keys receipts are verified with.
const pathReceiptKeys = receipt.KeysPath

// receiptPrev reads the Preflight-Receipt-Prev request header: the hash of
// the previous receipt of the caller's run, "" when absent. A value that is
// not one lower-case hex SHA-256 is an input error, whether or not this
// server signs (a caller that asks for a chain learns that it sent a bad
// link before anything is evaluated or paid).
func receiptPrev(r *http.Request) (string, *preflight.Error) {
	vs := r.Header[receipt.PrevHeader] // Header.Values, the key already canonical (TestCanonicalHeaderKeys)
	if len(vs) == 0 {
		return "", nil
	}
	if len(vs) > 1 || !receipt.IsHash(vs[0]) {
		found := vs[0]
		if len(vs) > 1 {
			found = "several values"
		}
		return "", &preflight.Error{
			Code:    preflight.ErrorInvalidRequest,
			Message: "the " + receipt.PrevHeader + " header must be one hash of the previous receipt: 64 lower-case hex digits, found " + strictjson.Clip(found),
		}
	}
	return vs[0], nil
}

// signAnswer returns the wire form of the receipt of body, an answer about
// to be sent, or nil when the server signs nothing.
func (h *handler) signAnswer(body []byte, prev string) ([]byte, error) {
	if h.cfg.Receipts == nil {
		return nil, nil
	}
	rc, err := h.cfg.Receipts.Sign(body, prev)
	if err != nil {
		return nil, err
	}
	return rc.Marshal(), nil
}

// receiptOnOK sets the receipt header on a response only if its status is
// 200, so that a paid decision's receipt goes out with the decision and
// never with a 402 or 503 that withholds it (a receipt names the decision it
// signs closely enough to be guessed from a handful of candidates).
type receiptOnOK struct {
	http.ResponseWriter
	value string
}

func (w *receiptOnOK) WriteHeader(status int) {
	if status == http.StatusOK && w.value != "" {
		w.Header().Set(receipt.Header, w.value)
	}
	w.ResponseWriter.WriteHeader(status)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *receiptOnOK) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// serveReceiptKeys answers GET /.well-known/preflight-receipt-keys: the JSON
// Web Key Set of the signing key (first) and the earlier keys still
// published, or 404 when the server signs no receipts.
func (h *handler) serveReceiptKeys(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Receipts == nil {
		writeError(w, &preflight.Error{
			Code:    ErrorNotFound,
			Message: "this server signs no receipts: it was started without a signing key",
		})
		return
	}
	receipt.WriteKeys(w, h.cfg.Receipts)
}
