package x402

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestFacilitatorCallsBounded: with MaxFacilitatorCalls 4 and a facilitator
// that holds every /verify, 40 concurrent payments make exactly 4 /verify
// calls; the other 36 are answered 503 server_busy with Retry-After and
// never reach the facilitator. The 4 admitted payments then verify and
// settle: holding their places until settlement, they never wait for one.
func TestFacilitatorCallsBounded(t *testing.T) {
	const limit, payments = 4, 40
	var verifies, settles atomic.Int32
	hold := make(chan struct{})
	fac := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/verify":
			verifies.Add(1)
			<-hold
			w.Write([]byte(`{"isValid":true,"payer":"0x857b06519e91e3a54538791bdbb0e22373e36b66"}`))
		case "/settle":
			settles.Add(1)
			w.Write([]byte(`{"success":true,"transaction":"0x9f","network":"eip155:8453","payer":"0x857b06519e91e3a54538791bdbb0e22373e36b66"}`))
		}
	}))
	defer fac.Close()
	cfg := testConfig(fac.URL)
	cfg.MaxFacilitatorCalls = limit
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}

	type answer struct {
		status     int
		retryAfter string
		body       string
	}
	answers := make(chan answer, payments)
	var wg sync.WaitGroup
	for i := range payments {
		sig := header(t, payload(fmt.Sprintf("0x%064x", i)))
		wg.Go(func() {
			req := httptest.NewRequest(http.MethodPost, testResource, nil)
			req.Header.Set(HeaderPaymentSignature, sig)
			rec := httptest.NewRecorder()
			p.Handle(rec, req, testResource, func() (int, []byte) { return 200, []byte(testDecision) })
			answers <- answer{rec.Code, rec.Header().Get("Retry-After"), rec.Body.String()}
		})
	}
	// The refused answer before the held ones are let go.
	wantBusy := answer{503, "1", envelope(ErrorServerBusy, "the server is processing as many payments as it allows at once (4); "+
		"this one was not sent to the facilitator and nothing was charged; retry after 1 s")}
	for range payments - limit {
		select {
		case a := <-answers:
			if diff := cmp.Diff(wantBusy, a, cmp.AllowUnexported(answer{})); diff != "" {
				t.Errorf("refused payment (-want +got):\n%s", diff)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("refused payments not answered while %d are held at /verify", limit)
		}
	}
	// The held payments took their places before the others were refused,
	// but their /verify requests may still be on the way.
	for deadline := time.Now().Add(10 * time.Second); verifies.Load() < limit && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if n := verifies.Load(); n != limit {
		t.Errorf("%d /verify calls while held, want %d", n, limit)
	}
	close(hold)
	wg.Wait()
	close(answers)
	for a := range answers {
		if a.status != 200 {
			t.Errorf("admitted payment answered %d, want 200: %s", a.status, a.body)
		}
	}
	if v, s := verifies.Load(), settles.Load(); v != limit || s != limit {
		t.Errorf("/verify, /settle calls = %d, %d; want %d, %d", v, s, limit, limit)
	}
	// The places are given back: one more payment is verified.
	if got := serve(t, p, header(t, payload("0xffff")), func() (int, []byte) { return 200, []byte(testDecision) }); got.status != 200 {
		t.Errorf("payment after the burst answered %d, want 200", got.status)
	}
}
