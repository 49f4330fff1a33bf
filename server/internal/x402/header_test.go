package x402

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHeaderRoundTrip(t *testing.T) {
	want := SettleResponse{Success: true, Payer: testPayer, Transaction: testTx, Network: "eip155:8453"}
	s, err := EncodeHeader(want)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := base64.StdEncoding.Strict().DecodeString(s); err != nil {
		t.Errorf("EncodeHeader output is not padded standard base64: %v", err)
	}
	var got SettleResponse
	if err := DecodeHeader(s, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestEncodeHeaderError(t *testing.T) {
	if _, err := EncodeHeader(func() {}); err == nil {
		t.Error("EncodeHeader(func) gave no error")
	}
}

// FuzzDecodeHeader checks that no header value makes DecodeHeader or the
// paywall's payload check panic, and that whatever decodePayload accepts is
// a version 2 payload that encodes again.
func FuzzDecodeHeader(f *testing.F) {
	f.Add("")
	f.Add(b64(`{"x402Version":2,"accepted":{},"payload":{}}`))
	f.Add(b64(`{"x402Version":2,"accepted":{"amount":1},"payload":{}}`))
	f.Add(b64(`[1,2,3]`))
	f.Fuzz(func(t *testing.T, s string) {
		var anyv map[string]any
		_ = DecodeHeader(s, &anyv)
		p, _, err := decodePayload(s)
		if err != nil {
			return
		}
		if p.X402Version != 2 {
			t.Fatalf("accepted a payload with x402Version %d", p.X402Version)
		}
		if !json.Valid(p.Payload) {
			t.Fatalf("accepted a payload whose payload is not JSON")
		}
		if _, err := EncodeHeader(p); err != nil {
			t.Fatalf("accepted payload does not encode: %v", err)
		}
	})
}
