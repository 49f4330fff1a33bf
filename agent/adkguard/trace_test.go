package adkguard_test

import (
	"context"
	"sync"
	"testing"

	"github.com/agentpreflight/preflight/agent/adkguard"
	"github.com/agentpreflight/preflight/agent/agenttest"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/genai"
)

// spans is an OpenTelemetry TracerProvider that keeps, per tool call id,
// whether ADK marked the call's execute_tool span as failed.
type spans struct {
	noop.TracerProvider
	mu     sync.Mutex
	failed map[string]bool // tool call id → the span's status is Error
}

func (p *spans) Tracer(string, ...trace.TracerOption) trace.Tracer { return tracer{p: p} }

type tracer struct {
	noop.Tracer
	p *spans
}

func (t tracer) Start(ctx context.Context, _ string, _ ...trace.SpanStartOption) (context.Context, trace.Span) {
	s := &span{p: t.p}
	return trace.ContextWithSpan(ctx, s), s
}

type span struct {
	noop.Span
	p      *spans
	mu     sync.Mutex
	id     string
	failed bool
}

func (s *span) SetStatus(c codes.Code, _ string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failed = s.failed || c == codes.Error
}

func (s *span) SetAttributes(kv ...attribute.KeyValue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range kv {
		if a.Key == "gen_ai.tool.call.id" {
			s.id = a.Value.AsString()
		}
	}
}

func (s *span) End(...trace.SpanEndOption) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.id == "" {
		return
	}
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	s.p.failed[s.id] = s.failed
}

// recorder returns the process's span recorder, emptied. It is set as the
// global TracerProvider once: ADK's tracer delegates to the first provider
// set, so a second test run (-count 2) must keep the first.
func recorder() *spans {
	installed.once.Do(func() {
		installed.p = &spans{}
		otel.SetTracerProvider(installed.p)
	})
	p := installed.p
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failed = map[string]bool{}
	return p
}

var installed struct {
	once sync.Once
	p    *spans
}

// TestTraces: in ADK's own telemetry (its execute_tool spans, read
// through the global OpenTelemetry TracerProvider), a call the guard
// withheld (a retry past the cap, a call over the budget) or answered
// with a saved result is not a failed tool call; a tool's real failure
// still is. Only the model is scripted (nextLLM).
func TestTraces(t *testing.T) {
	rec := recorder()
	sc := agenttest.NewScenario()
	g, err := adkguard.New(&adkguard.Options{BudgetUSD: "0.015", Specs: agenttest.ScenarioSpecs()})
	if err != nil {
		t.Fatal(err)
	}
	c := func(id, tool, args string) []agenttest.Call {
		return []agenttest.Call{{ID: id, Tool: tool, Args: args}}
	}
	cfg := llmagent.Config{Name: "assistant", Tools: scenarioTools(t, sc, false), Model: &nextLLM{next: turns(
		c("s1", agenttest.Search, `{"q":"alpha"}`),       // runs
		c("s2", agenttest.Search, `{"q":"alpha"}`),       // reused
		c("s3", agenttest.Search, `{"q":"beta"}`),        // deferred: over the budget
		c("t1", agenttest.File, `{"title":"disk full"}`), // fails: 422
		c("t2", agenttest.File, `{"title":"disk full"}`), // blocked: retry cap
	)}}
	rs := responses(run(t, cfg, []*plugin.Plugin{g.Plugin()}, genai.NewContentFromText("go", genai.RoleUser)))
	if len(rs) != 5 || rs[2].Response[adkguard.WithheldKey] == nil || rs[4].Response[adkguard.WithheldKey] == nil {
		t.Fatalf("responses %v", rs)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	want := map[string]bool{"s1": false, "s2": false, "s3": false, "t1": true, "t2": false}
	for id, failed := range want {
		got, ok := rec.failed[id]
		if !ok || got != failed {
			t.Errorf("the execute_tool span of %s: seen %v, failed %v; want failed %v", id, ok, got, failed)
		}
	}
}
