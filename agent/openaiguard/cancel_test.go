package openaiguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/openaiguard"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// streamTurns runs the session stream of the scripted session endpoint
// playing turns, with handlers, and returns its error; read gets the
// tool results the endpoint was sent.
func streamTurns(ctx context.Context, t *testing.T, handlers map[string]openai.AgentToolHandler, read func(id string, b []byte), turns ...[]agenttest.Call) error {
	t.Helper()
	var mu sync.Mutex
	srv := httptest.NewServer(newSessionModel(script(turns...), func(id string, b []byte) {
		mu.Lock()
		defer mu.Unlock()
		if read != nil {
			read(id, b)
		}
	}))
	defer srv.Close()
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
	stream := client.Beta.Agents.Sessions.Stream(ctx, "sess1", openai.AgentSessionStreamParams{Input: "go", ToolHandlers: handlers})
	defer stream.Close()
	for stream.Next() {
	}
	return stream.Err()
}

// TestCancelled: a search whose session stream is cancelled (or whose
// deadline passes) while its guarded tool handler runs, through the SDK's
// real session stream (only the session endpoint is scripted), is run
// once, recorded as a transient failure, counted at its estimate (it was
// started; nothing stays held) and never served again: the same search
// in a later stream executes anew. The stream runs a turn's handlers one
// after the other, so the identical search of the same turn does not
// wait on the first: the stream ends with the context and never runs it.
// This holds whether the handler returns the context's error or a result
// anyway.
func TestCancelled(t *testing.T) {
	for _, c := range []struct {
		name     string
		deadline bool
		anyway   bool // the handler returns a result after the context ended
	}{
		{name: "cancelled, the handler returns ctx.Err()"},
		{name: "cancelled, the handler returns a result anyway", anyway: true},
		{name: "deadline, the handler returns ctx.Err()", deadline: true},
		{name: "deadline, the handler returns a result anyway", deadline: true, anyway: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := agenttest.NewScenario()
			store := agenttest.NewArrivals()
			g, err := openaiguard.New(&adapt.Options{BudgetUSD: agenttest.ScenarioBudgetUSD, Specs: agenttest.ScenarioSpecs(), LedgerStore: store})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			if c.deadline {
				ctx, cancel = agenttest.Expiring(context.Background())
			}
			defer cancel()
			var started atomic.Bool
			handlers := g.Handlers(map[string]openai.AgentToolHandler{agenttest.Search: func(hctx context.Context, args map[string]any) (any, error) {
				q, _ := args["q"].(string)
				res, _ := sc.SearchRun(q)
				if started.Swap(true) {
					return res, nil
				}
				cancel() // the stream is cancelled, or its deadline passes
				<-hctx.Done()
				if c.anyway {
					return res, nil
				}
				return nil, hctx.Err()
			}})
			s := func(id string) agenttest.Call {
				return agenttest.Call{ID: id, Tool: agenttest.Search, Args: `{"q":"alpha"}`}
			}
			err = streamTurns(ctx, t, handlers, nil, []agenttest.Call{s("s1"), s("s2")})
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("the stream ended with %v, want the context's end", err)
			}
			store.CancelledOnce(t, sc, g.Session().Guard())
			// A later stream with the same search: it runs, and its result is new.
			read := map[string][]byte{}
			err = streamTurns(context.Background(), t, handlers, func(id string, b []byte) { read[id] = b }, []agenttest.Call{s("s3")})
			sp, _ := g.Session().Guard().SpentUSD(context.Background())
			var res map[string]any
			json.Unmarshal(read["s3"], &res)
			if err != nil || sc.Counts()[agenttest.Search] != 2 || res["execution"] != float64(2) || sp != "0.02" {
				t.Fatalf("the search again: %v, searches %d, read %q, spent %s; want it run anew (execution 2), 0.02", err, sc.Counts()[agenttest.Search], read["s3"], sp)
			}
			t.Logf("executions %d, spent %s", sc.Counts()[agenttest.Search], sp)
		})
	}
}

// TestCancelledChatLoop: in a Chat Completions tool loop written by hand
// whose turn's calls are guarded in parallel (Guard.Call), a search
// cancelled while it runs, with an identical search of the turn waiting
// on it, is run once, a transient failure at its estimate, nothing held;
// the waiting call is not handed its result, and the same search later
// runs anew.
func TestCancelledChatLoop(t *testing.T) {
	sc := agenttest.NewScenario()
	store := agenttest.NewArrivals()
	g, err := openaiguard.New(&adapt.Options{BudgetUSD: agenttest.ScenarioBudgetUSD, Specs: agenttest.ScenarioSpecs(), LedgerStore: store})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var started atomic.Bool
	run := func(rctx context.Context, args json.RawMessage) (string, error) {
		var in map[string]string
		json.Unmarshal(args, &in)
		res, _ := sc.SearchRun(in["q"])
		b, _ := json.Marshal(res)
		if started.Swap(true) {
			return string(b), nil
		}
		if !store.Wait(2, 10*time.Second) { // the duplicate waits on this call
			t.Error("the duplicate was not decided while the first search ran")
		}
		cancel()
		<-rctx.Done()
		return "", rctx.Err()
	}
	call := func(id string) openai.ChatCompletionMessageToolCallUnion {
		var c openai.ChatCompletionMessageToolCallUnion
		if err := json.Unmarshal([]byte(`{"id":"`+id+`","type":"function","function":{"name":"`+agenttest.Search+`","arguments":"{\"q\":\"alpha\"}"}}`), &c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	var wg sync.WaitGroup
	for _, id := range []string{"s1", "s2"} {
		wg.Go(func() { g.Call(ctx, call(id), run) })
	}
	wg.Wait()
	store.CancelledOnce(t, sc, g.Session().Guard())
	msg := g.Call(context.Background(), call("s3"), run)
	b, _ := json.Marshal(msg)
	var m struct{ Content string }
	json.Unmarshal(b, &m)
	var res map[string]any
	json.Unmarshal([]byte(m.Content), &res)
	if sc.Counts()[agenttest.Search] != 2 || res["execution"] != float64(2) {
		t.Fatalf("the search again: %s, searches %d; want it run anew (execution 2)", b, sc.Counts()[agenttest.Search])
	}
}

// script returns the next function of a scripted model that plays turns.
func script(turns ...[]agenttest.Call) func() []agenttest.Call {
	var mu sync.Mutex
	return func() []agenttest.Call {
		mu.Lock()
		defer mu.Unlock()
		if len(turns) == 0 {
			return nil
		}
		t := turns[0]
		turns = turns[1:]
		return t
	}
}
