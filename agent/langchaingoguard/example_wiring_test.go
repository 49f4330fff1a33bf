package langchaingoguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/langchaingoguard"
	pftools "github.com/agentpreflight/preflight/agent/tools"
	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/tools"
)

// The wiring of a real LangChainGo agent: its tools are plain
// LangChainGo tools (one fails with a Go error, as an HTTP client's does),
// the agent a function-calling agent, the guard wrapped around it before
// the executor is built, and the executor given a parser-error handler,
// so that neither a tool's error, nor a call the guard withholds, nor an
// answer of the model that does not parse ends the run. The model is
// scripted (a real one, llms.Model, would choose the calls): it fetches a
// page twice (the first fetch fails with a 503), searches twice, then
// sends one email and one more the budget does not hold.
func Example_wiring() {
	fetches := 0
	fetch := fn{"fetch_page", func(_ context.Context, input string) (string, error) {
		if fetches++; fetches == 1 {
			return "", errors.New("HTTP 503 Service Unavailable")
		}
		return `{"page":"…"}`, nil
	}}
	search := fn{"web_search", func(_ context.Context, input string) (string, error) {
		return `{"hits":3}`, nil
	}}
	email := fn{"send_email", func(_ context.Context, input string) (string, error) {
		var in struct{ To string }
		if err := json.Unmarshal([]byte(input), &in); err != nil {
			return "", err
		}
		return `{"sent":"` + in.To + `"}`, nil
	}}
	llm := &scriptedModel{next: script(
		call("c1", "fetch_page", `{"url":"https://x.io/a"}`), call("c2", "fetch_page", `{"url":"https://x.io/a"}`),
		call("c3", "web_search", `{"q":"go"}`), call("c4", "web_search", `{"q":"go"}`),
		call("c5", "send_email", `{"to":"a@x.io"}`), call("c6", "send_email", `{"to":"b@x.io"}`)),
		result: printOnce()}

	guard, err := langchaingoguard.New(&adapt.Options{BudgetUSD: "0.06", Specs: []pftools.Spec{
		{PriceUSD: "0.04", Operation: preflight.Operation{Name: "send_email", Effects: preflight.EffectsSideEffecting}},
		{PriceUSD: "0.01", Operation: preflight.Operation{Name: "web_search", Effects: preflight.EffectsReadOnly}},
		{Operation: preflight.Operation{Name: "fetch_page", Effects: preflight.EffectsReadOnly}},
	}})
	if err != nil {
		log.Fatal(err)
	}
	agent := agents.NewOpenAIFunctionsAgent(llm, []tools.Tool{fetch, search, email})
	executor := agents.NewExecutor(guard.Agent(agent), // a tool's Go error becomes the observation "error: …"
		agents.WithMaxIterations(20),
		agents.WithParserErrorHandler(agents.NewParserErrorHandler(nil))) // a ReAct agent's unparsable answer goes back to the model too
	out, err := chains.Run(context.Background(), executor, "fetch, search, mail")
	if err != nil {
		log.Fatal(err) // the run's context ended, or the model failed: not a tool, not a decision
	}
	spent, _ := guard.Session().Guard().SpentUSD(context.Background())
	fmt.Println("answer:", out, "fetches:", fetches, "spent: $"+spent)
	// Output:
	// c1 read error: HTTP 503 Service Unavailable
	// c2 read {"page":"…"}
	// c3 read {"hits":3}
	// c4 read {"hits":3}
	// c5 read {"sent":"a@x.io"}
	// c6 read {"error":"not run: the estimated cost of \"send_email\" ($0.
	// answer: done fetches: 2 spent: $0.05
}

// printOnce returns a function printing what the model read of each call,
// once: a function-calling model is sent the whole conversation each turn.
func printOnce() func(id string, b []byte) {
	seen := map[string]bool{}
	return func(id string, b []byte) {
		if !seen[id] {
			seen[id] = true
			fmt.Printf("%s read %.60s\n", id, b)
		}
	}
}
