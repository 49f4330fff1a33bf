package x402

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentpreflight/preflight/server/internal/x402/x402test"
	"github.com/google/go-cmp/cmp"
)

func TestFacilitatorSupported(t *testing.T) {
	fac := x402test.New(t, "", "")
	got, err := NewFacilitator(fac.URL+"/", nil).Supported(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := SupportedResponse{
		Kinds:      []SupportedKind{{X402Version: 2, Scheme: "exact", Network: "eip155:8453"}},
		Extensions: []string{},
		Signers:    map[string][]string{"eip155:*": {"0x1111111111111111111111111111111111111111"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Supported() (-want +got):\n%s", diff)
	}
}

func TestFacilitatorErrors(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    string
		call    string
		wantErr string
	}{
		{"supported not JSON", 200, "nope", "supported", "x402: facilitator unavailable: /supported answered HTTP 200 without a kinds list"},
		{"supported 404", 404, `{"kinds":[]}`, "supported", "x402: facilitator unavailable: /supported answered HTTP 404 without a kinds list"},
		{"verify empty", 200, "", "verify", "x402: facilitator unavailable: /verify answered HTTP 200 without a boolean isValid"},
		{"verify string isValid", 200, `{"isValid":"true"}`, "verify", "x402: facilitator unavailable: /verify answered HTTP 200 without a boolean isValid"},
		{"settle without transaction", 200, `{"success":true,"network":"eip155:8453"}`, "settle", "x402: facilitator unavailable: /settle answered success true with HTTP 200, transaction false, network true"},
		{"settle 202", 202, `{"success":true,"transaction":"0x1","network":"eip155:8453"}`, "settle", "x402: facilitator unavailable: /settle answered success true with HTTP 202, transaction true, network true"},
		{"redirect is not followed", 307, `{"isValid":true}`, "verify", "x402: facilitator unavailable: /verify answered isValid true with HTTP 307"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.status == 307 {
					w.Header().Set("Location", "/elsewhere")
				}
				w.WriteHeader(tc.status)
				w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			f := NewFacilitator(srv.URL, nil)
			var err error
			switch tc.call {
			case "supported":
				_, err = f.Supported(context.Background())
			case "verify":
				_, err = f.Verify(context.Background(), payload("0x01"), offer)
			case "settle":
				_, err = f.Settle(context.Background(), payload("0x01"), offer)
			}
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrFacilitator) {
				t.Errorf("error %v does not wrap ErrFacilitator", err)
			}
			if diff := cmp.Diff(tc.wantErr, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}
