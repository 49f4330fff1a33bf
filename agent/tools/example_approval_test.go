package tools_test

import (
	"fmt"

	"github.com/agentpreflight/preflight/agent/tools"
)

// A tool-spec file gives each tool an approval policy; Set.Consent says
// whether a call needs a person's consent, and why.
func ExampleSet_Consent() {
	specs, err := tools.DecodeSpecs([]byte(`{"builtins": false, "operations": [
	  {"provider": "mcp", "name": "delete_repo", "annotations": {"destructiveHint": true}, "approval": "destructive"},
	  {"provider": "mcp", "name": "buy_credits", "priceUsd": 2.50, "approval": {"aboveUsd": "1.00"}},
	  {"provider": "mcp", "name": "search", "annotations": {"readOnlyHint": true}, "approval": "destructive"}
	]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	set, err := tools.NewSet(tools.Spec{}, specs...)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, name := range []string{"delete_repo", "buy_credits", "search"} {
		c := set.Consent(name, []byte(`{}`))
		fmt.Printf("%s: %v (%s)\n", name, c.Needed, c.Reason)
	}
	// Output:
	// delete_repo: true (delete_repo is destructive (by its catalog effects or its MCP destructiveHint) and needs approval)
	// buy_credits: true (the estimated cost of the call, $2.50, is above $1.00, above which buy_credits needs approval)
	// search: false ()
}
