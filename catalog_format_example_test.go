package preflight_test

import (
	"encoding/json"
	"fmt"

	"github.com/agentpreflight/preflight"
)

// A scheduling tool whose schema says "format": "date-time". By default
// format is an annotation and any string passes; with AssertFormat a
// string that is not an RFC 3339 date-time is blocked before the call.
func ExampleOperation_assertFormat() {
	schema := json.RawMessage(`{"type":"object","required":["at"],"properties":{"at":{"type":"string","format":"date-time"}}}`)
	for _, assert := range []bool{false, true} {
		catalog, err := preflight.NewCatalog(preflight.Operation{
			Provider: "calendar", Name: "schedule", Schema: schema, AssertFormat: assert})
		if err != nil {
			fmt.Println(err)
			return
		}
		d, err := catalog.Decide(&preflight.ToolCallRequest{
			RunID: "run-1", StepID: "step-1",
			Tool: preflight.ToolCall{Provider: "calendar", Operation: "schedule",
				Request: json.RawMessage(`{"at":"next tuesday"}`), EstimatedExternalCostUSD: "0.01"},
			Budget: preflight.Budget{RemainingUSD: "1"},
		})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("AssertFormat:", assert, d.Verdict)
		for _, is := range d.Issues {
			fmt.Printf("  %s %s: %s\n", is.Path, is.Code, is.Message)
		}
	}
	// Output:
	// AssertFormat: false allow
	// AssertFormat: true block
	//   /tool/request/at format: expected a value in format "date-time", found "next tuesday"
}
