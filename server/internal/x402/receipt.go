package x402

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// MaxResponseHeaderBytes bounds the PAYMENT-RESPONSE header value the
// paywall writes, base64 included. Every field of that header comes from
// the facilitator, so its size is not the server's to choose unless it is
// clipped: an 80 KB header on a paid 200 is more than common clients read
// (Node's default limit for all headers is 16 KB, Python's http.client 64 KB
// per line), and a client that cannot read the response has paid for
// nothing. 4 KB fits every common client with room for the other headers.
//
// The receipt keeps its success flag, and its transaction, network, payer
// and amount are never longer than a real one (clipped at 128 bytes each; a
// transaction hash is 66). What is clipped is the prose: errorMessage to
// 512 bytes and extensions dropped when their JSON is over 1,024 bytes; the
// log line of the settlement carries the facilitator's full answer.
const MaxResponseHeaderBytes = 4096

// Bounds on the facilitator-supplied fields of a PAYMENT-RESPONSE.
const (
	maxReceiptField      = 128
	maxReceiptMessage    = 512
	maxReceiptExtensions = 1024
)

// clipTo shortens s to at most n bytes, on a UTF-8 boundary.
func clipTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// receiptHeader encodes sr for PAYMENT-RESPONSE within
// MaxResponseHeaderBytes.
func receiptHeader(sr SettleResponse) string {
	sr.ErrorReason = clipTo(sr.ErrorReason, maxReceiptField)
	sr.Payer = clipTo(sr.Payer, maxReceiptField)
	sr.Transaction = clipTo(sr.Transaction, maxReceiptField)
	sr.Network = clipTo(sr.Network, maxReceiptField)
	sr.Amount = clipTo(sr.Amount, maxReceiptField)
	sr.ErrorMessage = clipTo(sr.ErrorMessage, maxReceiptMessage)
	if len(sr.Extensions) > 0 {
		var compact bytes.Buffer
		if json.Compact(&compact, sr.Extensions) != nil || compact.Len() > maxReceiptExtensions {
			sr.Extensions = nil
		} else {
			sr.Extensions = compact.Bytes()
		}
	}
	// JSON escaping can still grow clipped text (a control byte becomes six
	// bytes), so drop the optional prose until the value fits.
	for _, drop := range []func(){
		func() {},
		func() { sr.Extensions = nil },
		func() { sr.ErrorMessage = "" },
	} {
		drop()
		enc, err := EncodeHeader(sr)
		if err == nil && len(enc) <= MaxResponseHeaderBytes {
			return enc
		}
	}
	// Unreachable: the fields left are each at most 128 bytes.
	enc, _ := EncodeHeader(SettleResponse{Success: sr.Success, Network: sr.Network})
	return enc
}
