package main

import (
	"encoding/json"

	"github.com/agentpreflight/preflight"
)

// toolCall is one tool call the scripted agent proposes.
type toolCall struct {
	Provider  string
	Operation string
	Request   json.RawMessage
	Why       string // what the agent was thinking; printed with -v
}

func search(query string, maxResults int) toolCall {
	req := map[string]any{"query": query}
	if maxResults > 0 {
		req["max_results"] = maxResults
	}
	b, _ := json.Marshal(req)
	return toolCall{Provider: "search", Operation: "web_search", Request: b}
}

func fetch(url string) toolCall {
	b, _ := json.Marshal(map[string]string{"url": url})
	return toolCall{Provider: "browse", Operation: "fetch", Request: b}
}

// quote asks the paid market-data API for a symbol's price; operation
// is normally "get_quote".
func quote(operation, symbol string) toolCall {
	b, _ := json.Marshal(map[string]string{"symbol": symbol})
	return toolCall{Provider: "marketdata", Operation: operation, Request: b}
}

// marketData is the catalog entry of the market-data API: its payload
// schema and its effects (a quote only reads).
var marketData = preflight.Operation{
	Provider: "marketdata",
	Name:     "get_quote",
	Schema: json.RawMessage(`{"type":"object","required":["symbol"],"additionalProperties":false,
		"properties":{"symbol":{"type":"string","pattern":"^[A-Z]{1,5}$","description":"ticker symbol"}}}`),
	Effects: preflight.EffectsReadOnly,
}

func why(c toolCall, s string) toolCall { c.Why = s; return c }

// session is a research agent's run, as a real agent tends to behave: it
// re-plans and repeats searches, re-opens pages it already read, retries a
// dead link, emits one malformed call from a broken template, hits a flaky
// query, asks for wide searches late in the run, and calls a paid
// market-data API (once with a bad symbol, once under a misspelled name).
func session() []toolCall {
	return []toolCall{
		why(search("go range over func iterators", 0), "first look"),
		why(fetch("https://go.dev/blog/range-functions"), "read the announcement"),
		why(fetch("https://go.dev/ref/spec#For_range"), "check the spec"),
		why(quote("get_quote", "ACME"), "paid data: ACME's share price"),
		why(search("go range over func iterators", 0), "re-plan: same search again"),
		why(fetch("https://blog.example.org/2023/iterators/gone"), "follow an old link"),
		why(fetch("https://blog.example.org/2023/iterators/gone"), "retry the dead link"),
		why(search("", 0), "template bug: empty query"),
		why(quote("get_quote", "acme"), "template bug: lower-case symbol"),
		why(search("iter.Seq2 examples", 0), "look for examples"),
		why(search("iter.Seq2 examples", 0), "provider hiccup: retry"),
		why(fetch("https://go.dev/blog/range-functions"), "re-read the announcement"),
		why(fetch("https://pkg.go.dev/iter"), "read the iter package"),
		why(quote("get_quote", "ACME"), "quote again for the summary"),
		why(fetch("https://blog.example.org/2023/iterators/gone"), "one more try at the old link"),
		why(search("go iterators performance", 0), "performance angle"),
		why(quote("get_qoute", "ACME"), "typo in the tool name"),
		why(search("go range over func iterators", 0), "summarize: search once more"),
		why(search("go iterator pull vs push design", 10), "wide search for the write-up"),
		why(search("go iterators real world usage", 10), "another wide search"),
	}
}
