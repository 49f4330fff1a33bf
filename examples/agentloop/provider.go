package main

import (
	"encoding/json"
	"fmt"
	"strings"
)

// This file is a SIMULATED search/browse/market-data provider. No network is used and
// no real vendor's prices are implied; the prices below are made up to look
// like a typical metered search API.

// Simulated prices, in micro-dollars (1,000,000 = $1).
const (
	searchPricePerResult = 1_000 // $0.001 per requested search result
	defaultMaxResults    = 5     // a search without max_results asks for 5
	fetchPrice           = 2_000 // $0.002 per page fetch
	quotePrice           = 3_000 // $0.003 per market-data quote
)

// simulatedProvider answers tool calls from canned rules. It charges for
// every call it receives, including failures and malformed requests, as
// metered APIs commonly do.
type simulatedProvider struct {
	spentMicros int64
	calls       int
	flaky       map[string]bool // queries that fail once, then work
}

func newSimulatedProvider() *simulatedProvider {
	return &simulatedProvider{flaky: map[string]bool{"iter.Seq2 examples": true}}
}

// price is what a call costs at the simulated provider.
func price(c toolCall) int64 {
	switch c.Provider {
	case "browse":
		return fetchPrice
	case "marketdata":
		return quotePrice
	}
	var p struct {
		MaxResults int `json:"max_results"`
	}
	_ = json.Unmarshal(c.Request, &p)
	if p.MaxResults <= 0 {
		p.MaxResults = defaultMaxResults
	}
	return int64(p.MaxResults) * searchPricePerResult
}

// outcome classes of the simulated provider, mirroring preflight's outcomes.
type callError struct {
	status    int
	transient bool
}

func (e *callError) Error() string { return fmt.Sprintf("simulated provider: HTTP %d", e.status) }

// do performs c: it charges, then returns the result text or an error.
func (s *simulatedProvider) do(c toolCall) (string, error) {
	s.calls++
	s.spentMicros += price(c)
	var p struct {
		Query  string `json:"query"`
		URL    string `json:"url"`
		Symbol string `json:"symbol"`
	}
	_ = json.Unmarshal(c.Request, &p)
	switch c.Provider {
	case "search":
		if p.Query == "" {
			return "", &callError{status: 400}
		}
		if s.flaky[p.Query] {
			s.flaky[p.Query] = false
			return "", &callError{status: 503, transient: true}
		}
		return "results for " + p.Query, nil
	case "marketdata":
		switch {
		case c.Operation != "get_quote":
			return "", &callError{status: 404}
		case !validSymbol(p.Symbol):
			return "", &callError{status: 400}
		}
		return "quote for " + p.Symbol, nil
	default:
		if !strings.HasPrefix(p.URL, "https://") || strings.Contains(p.URL, "/gone") {
			return "", &callError{status: 404}
		}
		return "page " + p.URL, nil
	}
}

// validSymbol is the simulated API's own rule: 1 to 5 upper-case letters.
func validSymbol(s string) bool {
	if len(s) < 1 || len(s) > 5 {
		return false
	}
	for _, r := range s {
		if r < 'A' || r > 'Z' {
			return false
		}
	}
	return true
}
