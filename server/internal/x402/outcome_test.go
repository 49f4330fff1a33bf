package x402

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/server/internal/x402/x402test"
)

// TestObserveOutcomes: Config.Observe hears every payment step of Handle,
// in order, one sequence per branch.
func TestObserveOutcomes(t *testing.T) {
	good := func(t *testing.T) string { return header(t, payload("0x01")) }
	tests := []struct {
		name           string
		verify, settle string
		down           bool
		short          bool
		hangUp         bool // the client is gone before verification
		sig            func(*testing.T) string
		produce        int
		want           []Outcome
	}{
		{name: "no payment", sig: func(*testing.T) string { return "" }, want: []Outcome{OutcomeChallengeSent}},
		{name: "malformed", sig: func(*testing.T) string { return "%%%" }, want: []Outcome{OutcomeMalformed}},
		{name: "other terms", sig: func(t *testing.T) string {
			p := payload("0x01")
			p.Accepted.Amount = "1"
			return header(t, p)
		}, want: []Outcome{OutcomeChallengeSent}},
		{name: "settled", sig: good, want: []Outcome{OutcomeVerified, OutcomeSettled}},
		{name: "rejected", verify: "invalid200", sig: good, want: []Outcome{OutcomeVerifyFailed}},
		{name: "verify 500", verify: "500", sig: good, want: []Outcome{OutcomeFacilitatorError}},
		{name: "facilitator down", down: true, sig: good, want: []Outcome{OutcomeFacilitatorError}},
		{name: "client hung up", hangUp: true, sig: good, want: []Outcome{OutcomeClientGone}},
		{name: "settlement refused", settle: "fail200", sig: good, want: []Outcome{OutcomeVerified, OutcomeSettleFailed}},
		{name: "settle garbage", settle: "garbage", sig: good, want: []Outcome{OutcomeVerified, OutcomeUnknown}},
		{name: "settle too slow", settle: "slow", short: true, sig: good, want: []Outcome{OutcomeVerified, OutcomeUnknown}},
		{name: "settlement pending", settle: "pending", sig: good, want: []Outcome{OutcomeVerified, OutcomeUnknown}},
		{name: "answer not 200: nothing settled", sig: good, produce: 500, want: []Outcome{OutcomeVerified}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := x402test.New(t, tc.verify, tc.settle)
			cfg := testConfig(f.URL)
			if tc.down {
				cfg.FacilitatorURL = x402test.ClosedURL(t)
			}
			if tc.short {
				cfg.VerifyTimeout, cfg.SettleTimeout = 50*time.Millisecond, 50*time.Millisecond
			}
			type ctxKey struct{}
			var mu sync.Mutex
			var got []Outcome
			cfg.Observe = func(ctx context.Context, o Outcome) {
				if ctx.Value(ctxKey{}) != "request" {
					t.Errorf("Observe(%s) without the request's context", o)
				}
				mu.Lock()
				got = append(got, o)
				mu.Unlock()
			}
			p, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			status := tc.produce
			if status == 0 {
				status = http.StatusOK
			}
			req := requestWithValue(ctxKey{}, "request")
			if tc.hangUp {
				ctx, cancel := context.WithCancel(req.Context())
				cancel()
				req = req.WithContext(ctx)
			}
			serveRequest(t, p, req, tc.sig(t), func() (int, []byte) { return status, []byte(`{}`) })
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(got, tc.want) {
				t.Errorf("outcomes %q, want %q", got, tc.want)
			}
		})
	}
}
