package einoguard_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/einoguard"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
)

// The wiring of a real eino agent: a ChatModelAgent whose tool errors
// reach the model as text instead of ending the run (ErrorsToModel,
// which spares interrupts), a tool that asks a person first
// (tool.Interrupt) and is resumed with the approval, and the guard. The
// model is scripted (a real one would choose the calls): it fetches a
// page twice (the first fetch fails with a 503), then sends an email.
func Example_wiring() {
	ctx := context.Background()
	type fetchArgs struct {
		URL string `json:"url"`
	}
	type emailArgs struct {
		To string `json:"to"`
	}
	fetches := 0
	fetch, _ := utils.InferTool("fetch_page", "Fetch a page.", func(_ context.Context, in fetchArgs) (string, error) {
		if fetches++; fetches == 1 {
			return "", errors.New("HTTP 503 Service Unavailable")
		}
		return "page " + in.URL, nil
	})
	email, _ := utils.InferTool("send_email", "Send an email (a person approves it).", func(ctx context.Context, in emailArgs) (string, error) {
		if resumed, _, approved := tool.GetResumeContext[bool](ctx); !resumed {
			return "", tool.Interrupt(ctx, "send an email to "+in.To+"?")
		} else if !approved {
			return "not sent: refused", nil
		}
		return "sent to " + in.To, nil
	})

	guard, err := einoguard.New(&einoguard.Options{BudgetUSD: "1", Specs: []tools.Spec{
		{PriceUSD: "0.04", Operation: preflight.Operation{Name: "send_email", Effects: preflight.EffectsSideEffecting}},
		{Operation: preflight.Operation{Name: "fetch_page", Effects: preflight.EffectsReadOnly}},
	}})
	if err != nil {
		log.Fatal(err)
	}
	var chatModel model.ToolCallingChatModel = &exampleModel{} // a real one: ark, openai, claude, …
	agent, err := adk.NewChatModelAgent(ctx, &adk.ChatModelAgentConfig{
		Name: "assistant", Description: "fetches pages and sends emails", Model: chatModel,
		ToolsConfig: adk.ToolsConfig{ToolsNodeConfig: compose.ToolsNodeConfig{
			Tools:               []tool.BaseTool{fetch, email},
			ToolCallMiddlewares: []compose.ToolMiddleware{einoguard.ErrorsToModel(), guard.Middleware()},
		}},
	})
	if err != nil {
		log.Fatal(err)
	}
	runner := adk.NewRunner(ctx, adk.RunnerConfig{Agent: agent, CheckPointStore: &memStore{m: map[string][]byte{}}})

	interrupt := drainExample(runner.Query(ctx, "go", adk.WithCheckPointID("run-1")))
	// A person approves the email; the run resumes from its checkpoint.
	events, err := runner.ResumeWithParams(ctx, "run-1", &adk.ResumeParams{Targets: map[string]any{interrupt: true}})
	if err != nil {
		log.Fatal(err)
	}
	drainExample(events)
	spent, _ := guard.Session().Guard().SpentUSD(ctx)
	fmt.Println("fetches:", fetches, "spent: $"+spent)
	// Output:
	// tool: error: [LocalFunc] failed to invoke tool, toolName=fetch_page, err=HTTP 503 Service Unavailable
	// tool: page https://x.io/a
	// interrupted: send an email to a@x.io?
	// tool: sent to a@x.io
	// assistant: done
	// fetches: 2 spent: $0.04
}

// drainExample prints the tool results, interrupts and final text of a
// run's events, and returns the id of the interrupt that paused it.
func drainExample(events *adk.AsyncIterator[*adk.AgentEvent]) (interrupt string) {
	for {
		ev, ok := events.Next()
		if !ok {
			return interrupt
		}
		if ev.Err != nil {
			log.Fatal(ev.Err)
		}
		if ev.Action != nil && ev.Action.Interrupted != nil {
			for _, ic := range ev.Action.Interrupted.InterruptContexts {
				if ic.IsRootCause {
					interrupt = ic.ID
					fmt.Println("interrupted:", ic.Info)
				}
			}
		}
		if o := ev.Output; o != nil && o.MessageOutput != nil && o.MessageOutput.Message != nil {
			if m := o.MessageOutput.Message; m.Role == schema.Tool || m.Role == schema.Assistant && m.Content != "" {
				fmt.Printf("%s: %s\n", m.Role, m.Content)
			}
		}
	}
}

// exampleModel stands in for a language model: it fetches one page
// twice, then sends one email, then says "done".
type exampleModel struct{ turn int }

func (m *exampleModel) Generate(context.Context, []*schema.Message, ...model.Option) (*schema.Message, error) {
	m.turn++
	call := func(name, args string) *schema.Message {
		return schema.AssistantMessage("", []schema.ToolCall{{ID: fmt.Sprint("c", m.turn), Type: "function",
			Function: schema.FunctionCall{Name: name, Arguments: args}}})
	}
	switch m.turn {
	case 1, 2:
		return call("fetch_page", `{"url":"https://x.io/a"}`), nil
	case 3:
		return call("send_email", `{"to":"a@x.io"}`), nil
	}
	return schema.AssistantMessage("done", nil), nil
}

func (m *exampleModel) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	msg, err := m.Generate(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{msg}), nil
}

func (m *exampleModel) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	return m, nil
}
