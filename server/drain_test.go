package server

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/server/internal/x402"
	"github.com/agentpreflight/preflight/server/internal/x402/x402test"
	"github.com/google/go-cmp/cmp"
)

// TestDrainRefusesNewPayments: once Drain.Start is called, a request that
// carries a payment is answered 503 server_busy with Retry-After before the
// facilitator is asked anything, while a request without payment still
// gets its free 402 challenge and the free routes still answer. The
// facilitator is the shared fake (a real one needs a chain).
func TestDrainRefusesNewPayments(t *testing.T) {
	tests := []struct {
		name        string
		started     bool
		path, body  string
		pay         bool
		wantStatus  int
		wantCode    string
		wantRetry   string
		wantVerify  int
		wantSettles int
	}{
		{"payment before shutdown is settled", false, "/v0.2/preflight/tool-call", toolAllow, true, 200, "", "", 1, 1},
		{"payment during shutdown is refused unverified", true, "/v0.2/preflight/tool-call", toolAllow, true, 503, "server_busy", "1", 0, 0},
		{"challenge during shutdown", true, "/v0.2/preflight/tool-call", toolAllow, false, 402, "payment_required", "", 0, 0},
		{"invalid input during shutdown is a free 400", true, "/v0.2/preflight/tool-call", `{}`, true, 400, "invalid_request", "", 0, 0},
		{"free route during shutdown", true, "/check-request", checkValid, false, 200, "", "", 0, 0},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fac := x402test.New(t, "", "")
			cfg := paidConfig(fac.URL, nil)
			cfg.Drain = &Drain{}
			if tc.started {
				cfg.Drain.Start()
			}
			ts := httptest.NewServer(New(cfg))
			defer ts.Close()
			req, _ := http.NewRequest("POST", ts.URL+tc.path, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			if tc.pay {
				req.Header.Set(x402.HeaderPaymentSignature, paymentSignature(cfg.Payment, "0x0"+string(rune('1'+i)), ""))
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.wantStatus || (tc.wantCode != "" && !strings.Contains(string(body), `"code":"`+tc.wantCode+`"`)) {
				t.Errorf("answer %d %s; want %d %s", resp.StatusCode, body, tc.wantStatus, tc.wantCode)
			}
			if got := resp.Header.Get("Retry-After"); got != tc.wantRetry {
				t.Errorf("Retry-After %q, want %q", got, tc.wantRetry)
			}
			v, s := fac.Counts()
			if diff := cmp.Diff([2]int{tc.wantVerify, tc.wantSettles}, [2]int{v, s}); diff != "" {
				t.Errorf("facilitator calls [verify settle] (-want +got):\n%s", diff)
			}
			if got := cfg.Drain.Settling(); len(got) != 0 {
				t.Errorf("Settling after the answer: %q, want none", got)
			}
		})
	}
}

// TestDrainSettling: a payment whose settlement is under way is listed by
// Drain.Settling with its request id, and a payment that began before
// shutdown is settled and answered even though Start is called meanwhile.
func TestDrainSettling(t *testing.T) {
	fac := x402test.New(t, "", "slowok")
	fac.SettleDelay = 1500 * time.Millisecond
	cfg := paidConfig(fac.URL, slog.New(slog.DiscardHandler))
	cfg.Drain = &Drain{}
	ts := httptest.NewServer(New(cfg))
	defer ts.Close()

	req, _ := http.NewRequest("POST", ts.URL+"/v0.2/preflight/tool-call", strings.NewReader(toolAllow))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", "drain-1")
	req.Header.Set(x402.HeaderPaymentSignature, paymentSignature(cfg.Payment, "0x01", ""))
	answered := make(chan int, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()

	var settling []string
	for deadline := time.Now().Add(10 * time.Second); len(settling) == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		settling = cfg.Drain.Settling()
	}
	if diff := cmp.Diff([]string{"drain-1"}, settling); diff != "" {
		t.Fatalf("Settling while the facilitator settles (-want +got):\n%s", diff)
	}
	cfg.Drain.Start()
	if status := <-answered; status != 200 {
		t.Errorf("payment settling when shutdown began: status %d, want 200", status)
	}
	if got := cfg.Drain.Settling(); len(got) != 0 {
		t.Errorf("Settling after the answer: %q, want none", got)
	}
}
