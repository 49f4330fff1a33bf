package server

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
)

// apiClient sends requests to a test server and checks every exchange
// against the OpenAPI document that server publishes, so the document
// cannot drift from the code:
//
//   - a documented operation's response must match its documented status,
//     media type, headers and body schema;
//   - a request the server answered 200 must match its documented request
//     schema (the document may be looser than the library, never stricter);
//   - an exchange on an undocumented path or method must be the error
//     envelope (404 or 405) as the document's ErrorEnvelope schema describes.
type apiClient struct {
	t     *testing.T
	srv   *httptest.Server
	model *v3.Document
	v     validator.Validator
}

// exchange is a response with its body read.
type exchange struct {
	Status int
	Header http.Header
	Body   []byte
}

// newAPIClient starts h on a loopback test server and loads its OpenAPI
// document from GET /openapi.json.
func newAPIClient(t *testing.T, h http.Handler) *apiClient {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	resp, err := srv.Client().Get(srv.URL + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := libopenapi.NewDocument(spec)
	if err != nil {
		t.Fatalf("openapi.json does not parse: %v", err)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("openapi.json does not build a v3 model: %v", err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		for _, e := range verrs {
			t.Errorf("openapi.json is not a valid OpenAPI 3.1 document: %s: %s", e.Message, e.Reason)
		}
		t.FailNow()
	}
	return &apiClient{t: t, srv: srv, model: &model.Model, v: v}
}

// do sends method path with body (nil for none) and the given headers
// ("Name: value" strings), validates the exchange and returns it.
func (c *apiClient) do(method, path string, body []byte, headers ...string) exchange {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, c.srv.URL+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(k, strings.TrimSpace(v))
	}
	return c.send(req, body)
}

// send sends req, whose body bytes are body, and validates the exchange.
func (c *apiClient) send(req *http.Request, body []byte) exchange {
	c.t.Helper()
	resp, err := c.srv.Client().Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		c.t.Fatal(err)
	}
	x := exchange{Status: resp.StatusCode, Header: resp.Header, Body: got}
	c.validate(req, body, x)
	return x
}

// operation returns the documented operation for method on path, or nil.
func (c *apiClient) operation(method, path string) *v3.Operation {
	item, ok := c.model.Paths.PathItems.Get(path)
	if !ok {
		return nil
	}
	return item.GetOperations().GetOrZero(strings.ToLower(method))
}

// validate checks one exchange against the document.
func (c *apiClient) validate(req *http.Request, body []byte, x exchange) {
	c.t.Helper()
	fresh := func() *http.Request {
		r := req.Clone(req.Context())
		// The server reads a body without Content-Type, or with any
		// application/*+json type, exactly as application/json, which is
		// the one media type the document lists (and says so).
		if ct := r.Header.Get("Content-Type"); body != nil && (ct == "" || isJSONMediaType(ct)) {
			r.Header.Set("Content-Type", "application/json")
		}
		if body != nil {
			r.Body = io.NopCloser(bytes.NewReader(body))
		} else {
			r.Body = http.NoBody
		}
		return r
	}
	if c.operation(req.Method, req.URL.Path) == nil {
		if req.Method == http.MethodHead {
			return // a HEAD answer has no body to check
		}
		if x.Status != http.StatusNotFound && x.Status != http.StatusMethodNotAllowed {
			c.t.Errorf("%s %s: undocumented exchange answered %d, want 404 or 405", req.Method, req.URL.Path, x.Status)
		}
		c.validateEnvelope(req, x)
		return
	}
	if x.Status == http.StatusOK {
		if ok, errs := c.v.ValidateHttpRequestSync(fresh()); !ok {
			for _, e := range errs {
				if strings.Contains(e.Reason, "cannot unmarshal number") {
					// The validator decodes numbers into float64 and cannot hold
					// a valid JSON number such as 1e400; the document is not at fault.
					c.t.Logf("%s %s: validator cannot decode a number: %s", req.Method, req.URL.Path, e.Reason)
					continue
				}
				c.t.Errorf("%s %s: request accepted by the server breaks openapi.json: %s: %s", req.Method, req.URL.Path, e.Message, e.Reason)
			}
		}
	}
	resp := &http.Response{
		StatusCode: x.Status,
		Header:     x.Header,
		Body:       io.NopCloser(bytes.NewReader(x.Body)),
		Request:    fresh(),
	}
	// The validator passes a status the operation does not list at all.
	if op := c.operation(req.Method, req.URL.Path); op.Responses.Default == nil {
		code := strconv.Itoa(x.Status)
		if _, ok := op.Responses.Codes.Get(code); !ok {
			if _, ok := op.Responses.Codes.Get(code[:1] + "XX"); !ok {
				c.t.Errorf("%s %s -> %d: openapi.json documents no such status for the operation", req.Method, req.URL.Path, x.Status)
			}
		}
	}
	if ok, errs := c.v.ValidateHttpResponse(fresh(), resp); !ok {
		for _, e := range errs {
			c.t.Errorf("%s %s -> %d: response breaks openapi.json: %s: %s", req.Method, req.URL.Path, x.Status, e.Message, e.Reason)
		}
	}
}

// validateEnvelope checks that x is the documented error envelope.
func (c *apiClient) validateEnvelope(req *http.Request, x exchange) {
	c.t.Helper()
	if ct := x.Header.Get("Content-Type"); ct != "application/json" {
		c.t.Errorf("%s %s: Content-Type %q, want application/json", req.Method, req.URL.Path, ct)
	}
	schema := c.model.Components.Schemas.GetOrZero("ErrorEnvelope").Schema()
	if ok, errs := schema_validation.NewSchemaValidator().ValidateSchemaBytes(schema, x.Body); !ok {
		for _, e := range errs {
			c.t.Errorf("%s %s: body is not the ErrorEnvelope: %s: %s", req.Method, req.URL.Path, e.Message, e.Reason)
		}
	}
}
