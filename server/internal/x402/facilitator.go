package x402

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// maxFacilitatorBody bounds how much of a facilitator reply is read.
const maxFacilitatorBody = 64 << 10

// ErrFacilitator marks every error a [Facilitator] method returns: the
// facilitator could not be reached, timed out, or gave no decodable answer.
// A definite "invalid" or "not settled" answer is not an error.
var ErrFacilitator = errors.New("x402: facilitator unavailable")

// Facilitator is an HTTP client of an x402 facilitator. It never retries a
// call. It is safe for concurrent use.
type Facilitator struct {
	base   string
	client *http.Client
}

// NewFacilitator returns a client of the facilitator at baseURL (its
// endpoints are baseURL + "/verify", "/settle", "/supported"). A nil client
// means one with a 30 s overall timeout that never follows redirects. It
// does no I/O; Config.Validate checks a URL before it gets here.
func NewFacilitator(baseURL string, client *http.Client) *Facilitator {
	if client == nil {
		client = DefaultHTTPClient()
	}
	return &Facilitator{base: strings.TrimRight(baseURL, "/"), client: client}
}

// DefaultHTTPClient returns a new client as used when [Config.HTTPClient]
// is nil: a 30 s overall timeout, bounded dial, TLS and header waits, and no
// redirects followed. Wrap its Transport to instrument facilitator calls.
func DefaultHTTPClient() *http.Client {
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   5 * time.Second,
			ResponseHeaderTimeout: 20 * time.Second,
			MaxIdleConnsPerHost:   8,
			IdleConnTimeout:       90 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Verify asks the facilitator whether payload pays req. req must be the
// resource server's own requirements, not the client's copy. The answer's
// isValid is read whatever the HTTP status: a 400 or 500 carrying
// {"isValid":false,...} is a definite "invalid" and no error. An error
// (wrapping [ErrFacilitator]) means there is no usable answer: unreachable,
// ctx done, a body without a boolean isValid, or isValid true with a status
// other than 200.
func (f *Facilitator) Verify(ctx context.Context, payload PaymentPayload, req PaymentRequirements) (VerifyResponse, error) {
	status, body, err := f.post(ctx, "/verify", payload, req)
	if err != nil {
		return VerifyResponse{}, err
	}
	var got struct {
		IsValid *bool `json:"isValid"`
		VerifyResponse
	}
	if json.Unmarshal(body, &got) != nil || got.IsValid == nil {
		return VerifyResponse{}, fmt.Errorf("%w: /verify answered HTTP %d without a boolean isValid", ErrFacilitator, status)
	}
	got.VerifyResponse.IsValid = *got.IsValid
	if got.VerifyResponse.IsValid && status != http.StatusOK {
		return VerifyResponse{}, fmt.Errorf("%w: /verify answered isValid true with HTTP %d", ErrFacilitator, status)
	}
	return got.VerifyResponse, nil
}

// Settle asks the facilitator to execute the payment. req must be the same
// requirements given to Verify. A body with "success": false, whatever the
// HTTP status, is a definite "not settled" and no error. A success needs
// HTTP 200, a non-empty transaction and network; anything else (and
// unreachable, ctx done) is an error wrapping [ErrFacilitator], whose
// outcome on chain is unknown.
func (f *Facilitator) Settle(ctx context.Context, payload PaymentPayload, req PaymentRequirements) (SettleResponse, error) {
	status, body, err := f.post(ctx, "/settle", payload, req)
	if err != nil {
		return SettleResponse{}, err
	}
	var got struct {
		Success *bool `json:"success"`
		SettleResponse
	}
	if json.Unmarshal(body, &got) != nil || got.Success == nil {
		return SettleResponse{}, fmt.Errorf("%w: /settle answered HTTP %d without a boolean success", ErrFacilitator, status)
	}
	got.SettleResponse.Success = *got.Success
	if got.SettleResponse.Success && (status != http.StatusOK || got.Transaction == "" || got.Network == "") {
		return SettleResponse{}, fmt.Errorf("%w: /settle answered success true with HTTP %d, transaction %t, network %t", ErrFacilitator, status, got.Transaction != "", got.Network != "")
	}
	return got.SettleResponse, nil
}

// Supported lists what the facilitator handles (GET /supported). Any answer
// but HTTP 200 with a JSON object holding a "kinds" array is an error
// wrapping [ErrFacilitator].
func (f *Facilitator) Supported(ctx context.Context) (SupportedResponse, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, f.base+"/supported", nil)
	if err != nil {
		return SupportedResponse{}, fmt.Errorf("%w: %v", ErrFacilitator, err)
	}
	hreq.Header.Set("Accept", "application/json")
	status, body, err := f.do(hreq)
	if err != nil {
		return SupportedResponse{}, err
	}
	var got SupportedResponse
	if status != http.StatusOK || json.Unmarshal(body, &got) != nil || got.Kinds == nil {
		return SupportedResponse{}, fmt.Errorf("%w: /supported answered HTTP %d without a kinds list", ErrFacilitator, status)
	}
	return got, nil
}

func (f *Facilitator) post(ctx context.Context, path string, payload PaymentPayload, req PaymentRequirements) (int, []byte, error) {
	b, err := json.Marshal(facilitatorRequest{X402Version: payload.X402Version, PaymentPayload: payload, PaymentRequirements: req})
	if err != nil {
		return 0, nil, fmt.Errorf("%w: encode %s request: %v", ErrFacilitator, path, err)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, f.base+path, bytes.NewReader(b))
	if err != nil {
		return 0, nil, fmt.Errorf("%w: %v", ErrFacilitator, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	return f.do(hreq)
}

// do sends hreq and reads at most maxFacilitatorBody bytes of the reply.
// Errors never include request bodies.
func (f *Facilitator) do(hreq *http.Request) (int, []byte, error) {
	resp, err := f.client.Do(hreq)
	if err != nil {
		if ctxErr := hreq.Context().Err(); ctxErr != nil {
			return 0, nil, fmt.Errorf("%w: %s %s: %v", ErrFacilitator, hreq.Method, hreq.URL.Path, ctxErr)
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // drop the URL's repetition; the path is said once
		}
		return 0, nil, fmt.Errorf("%w: %s %s: %v", ErrFacilitator, hreq.Method, hreq.URL.Path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxFacilitatorBody+1))
	if err != nil {
		return 0, nil, fmt.Errorf("%w: %s %s: reading reply: %v", ErrFacilitator, hreq.Method, hreq.URL.Path, err)
	}
	if len(body) > maxFacilitatorBody {
		return 0, nil, fmt.Errorf("%w: %s %s: reply over %d bytes", ErrFacilitator, hreq.Method, hreq.URL.Path, maxFacilitatorBody)
	}
	return resp.StatusCode, body, nil
}
