// Command testserver is a stand-in for preflightd in the x402 interop test:
// it serves GET /health and the paid POST /v0.2/preflight/tool-call with
// the library's decoder and Decide behind an x402.Paywall, and takes the
// same payment flags as preflightd (--addr, --base-url, --pay-to,
// --network, --facilitator-url). It is used only when server/cmd/preflightd
// does not exist; it is not a product.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/server/x402"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	baseURL := flag.String("base-url", "", "public base URL (default http://ADDR)")
	payTo := flag.String("pay-to", "", "x402 recipient address")
	network := flag.String("network", "", "CAIP-2 network")
	facilitator := flag.String("facilitator-url", "", "x402 facilitator base URL")
	flag.Parse()
	if *baseURL == "" {
		*baseURL = "http://" + *addr
	}
	pw, err := x402.New(x402.Config{PayTo: *payTo, Network: *network, FacilitatorURL: *facilitator})
	if err != nil {
		log.Fatal(err)
	}
	route := strings.TrimRight(*baseURL, "/") + "/v0.2/preflight/tool-call"

	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"ok"}`)
	})
	mux.HandleFunc("POST /v0.2/preflight/tool-call", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 65536))
		if err != nil {
			writeJSON(w, http.StatusRequestEntityTooLarge, &preflight.Error{Code: preflight.CodePayloadTooLarge, Message: "body over 65536 bytes"})
			return
		}
		req, err := preflight.DecodeToolCallRequest(body)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, asError(err))
			return
		}
		pw.Handle(w, r, route, func() (int, []byte) {
			d, err := preflight.Decide(req)
			if err != nil {
				b, _ := json.Marshal(asError(err))
				return http.StatusBadRequest, b
			}
			b, _ := json.Marshal(d)
			return http.StatusOK, b
		})
	})
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	fmt.Fprintln(os.Stderr, "testserver listening on", *addr)
	log.Fatal(srv.ListenAndServe())
}

func asError(err error) *preflight.Error {
	var pe *preflight.Error
	if errors.As(err, &pe) {
		return pe
	}
	return &preflight.Error{Code: preflight.CodeInvalidRequest, Message: err.Error()}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}
