package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/agentpreflight/preflight/agent/tools"
)

// A tool that always needs approval: the first call is answered with an
// input_required result asking the person; the client's retry, carrying
// the answer and the requestState, runs the call once, sent upstream
// without the guard's own members.
func ExampleApprovals() {
	s, err := mcpguard.NewSession(&mcpguard.Options{
		Approvals: mcpguard.Approvals{Principal: "alice", Run: "nightly"},
		Specs: []tools.Spec{{Operation: preflight.Operation{Name: "send_email"}, PriceUSD: "0.01",
			Approval: tools.Approval{When: tools.ApprovalAlways}}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	s.SawToolsList("", json.RawMessage(`{"tools":[{"name":"send_email","inputSchema":{"type":"object"}}]}`))
	forward := func(ctx context.Context, params json.RawMessage) func(context.Context) (json.RawMessage, error) {
		return func(ctx context.Context) (json.RawMessage, error) {
			fmt.Printf("upstream gets %s\n", mcpguard.UpstreamParams(ctx, params))
			return json.RawMessage(`{"content":[{"type":"text","text":"sent"}]}`), nil
		}
	}
	ctx := context.Background()
	first := json.RawMessage(`{"name":"send_email","arguments":{"to":"bob"}}`)
	res, _ := s.CallTool(ctx, first, forward(ctx, first))
	var asked struct {
		ResultType    string `json:"resultType"`
		RequestState  string `json:"requestState"`
		InputRequests map[string]struct {
			Method string `json:"method"`
		} `json:"inputRequests"`
	}
	json.Unmarshal(res, &asked)
	fmt.Println(asked.ResultType, asked.InputRequests[mcpguard.ApprovalInputKey].Method)

	retry := json.RawMessage(`{"name":"send_email","arguments":{"to":"bob"},"requestState":"` + asked.RequestState +
		`","inputResponses":{"` + mcpguard.ApprovalInputKey + `":{"action":"accept","content":{"approve":true}}}}`)
	res, _ = s.CallTool(ctx, retry, forward(ctx, retry))
	fmt.Println(string(res))
	// Output:
	// input_required elicitation/create
	// upstream gets {"arguments":{"to":"bob"},"name":"send_email"}
	// {"content":[{"type":"text","text":"sent"}]}
}
