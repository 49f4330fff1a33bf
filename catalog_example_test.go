package preflight_test

import (
	"encoding/json"
	"fmt"

	"github.com/agentpreflight/preflight"
)

// An agent runtime decides for its own tools: a paid market-data API that
// only reads, and an email tool that has side effects. The catalog is built
// once, with the built-in operations kept, and used for every decision.
func ExampleNewCatalog() {
	ops := append(preflight.DefaultCatalog().Operations(),
		preflight.Operation{
			Provider: "marketdata",
			Name:     "get_quote",
			Schema: json.RawMessage(`{
				"type": "object",
				"description": "A quote request; annotations like this one are ignored",
				"required": ["symbol"],
				"properties": {"symbol": {"type": "string", "pattern": "^[A-Z]{1,5}$"}},
				"additionalProperties": false
			}`),
			Effects: preflight.EffectsReadOnly,
		},
		preflight.Operation{
			Provider:    "email",
			Name:        "send_email",
			Annotations: &preflight.ToolAnnotations{DestructiveHint: new(bool)}, // readOnlyHint absent: not read-only
		},
	)
	catalog, err := preflight.NewCatalog(ops...)
	if err != nil {
		fmt.Println(err)
		return
	}
	decide := func(provider, operation, payload string) {
		d, err := catalog.Decide(&preflight.ToolCallRequest{
			RunID: "run-1", StepID: "step-1",
			Tool: preflight.ToolCall{Provider: provider, Operation: operation,
				Request: json.RawMessage(payload), EstimatedExternalCostUSD: "0.05"},
			Budget: preflight.Budget{RemainingUSD: "1"},
		})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(provider+"/"+operation, d.Verdict, d.ReasonCodes)
		for _, is := range d.Issues {
			fmt.Printf("  %s %s: %s\n", is.Path, is.Code, is.Message)
		}
	}
	decide("marketdata", "get_quote", `{"symbol":"acme"}`)
	decide("marketdata", "get_quote", `{"symbol":"ACME"}`)
	decide("email", "send_email", `{"to":"ops@example.com"}`)
	decide("email", "send_emails", `{"to":"ops@example.com"}`)
	effects, _ := catalog.EffectsOf("email", "send_email")
	fmt.Println("send_email effects:", effects)
	// Output:
	// marketdata/get_quote block [INVALID_PAYLOAD]
	//   /tool/request/symbol pattern: expected a value matching pattern "^[A-Z]{1,5}$", found "acme"
	// marketdata/get_quote allow [NO_PROVEN_WASTE]
	// email/send_email allow [NO_PROVEN_WASTE]
	// email/send_emails advise [UNSUPPORTED_OPERATION]
	//   /tool/operation unknown_operation: the catalog has no operation "send_emails" for provider "email"; it has "search/web_search", "browse/fetch", "marketdata/get_quote", "email/send_email"
	//   /tool/operation similar_operation: did you mean "email/send_email"? (one edit away; the call is not decided as that operation)
	// send_email effects: side_effecting
}

// A catalog file, as preflightd --operations reads it. Decoding is strict
// and points at the problem.
func ExampleDecodeCatalog() {
	_, err := preflight.DecodeCatalog([]byte(`{"operations": [
		{"provider": "github", "name": "create_issue", "effects": "side_efecting",
		 "schema": {"type": "object", "properties": {"title": {"type": "string", "format": "text"}}}}
	]}`))
	fmt.Println(err)
	catalog, err := preflight.DecodeCatalog([]byte(`{"operations": [
		{"provider": "github", "name": "get_issue", "annotations": {"readOnlyHint": true},
		 "schema": {"type": "object", "required": ["owner", "repo", "issue_number"]}}
	]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	effects, _ := catalog.EffectsOf("github", "get_issue")
	fmt.Println("get_issue effects:", effects)
	// Output:
	// invalid_request: the request breaks an input rule (/operations/0/effects: expected one of "read_only", "side_effecting", "destructive", found "side_efecting")
	// get_issue effects: read_only
}

// A guard checks each call's arguments against the tool's schema before
// it sends the call. The catalog compiled the schema once; each check
// parses the arguments and validates them.
func ExampleCatalog_CheckArguments() {
	catalog, err := preflight.NewCatalog(preflight.Operation{
		Provider: "mail",
		Name:     "send_email",
		Schema: json.RawMessage(`{
			"$schema": "http://json-schema.org/draft-07/schema#",
			"type": "object",
			"required": ["to", "subject"],
			"properties": {
				"to": {"type": "array", "minItems": 1, "items": {"type": "string", "pattern": "^[^@\\s]+@[^@\\s]+$"}},
				"subject": {"type": "string", "maxLength": 200}
			},
			"additionalProperties": false
		}`),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, args := range []string{
		`{"to":["ops@example.com"],"subject":"weekly usage"}`,
		`{"to":["ops(at)example.com"],"cc":[]}`,
		`["ops@example.com"]`,
	} {
		issues, err := catalog.CheckArguments("mail", "send_email", []byte(args))
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		fmt.Println(len(issues), "issues")
		for _, is := range issues {
			fmt.Printf("  %q %s: %s\n", is.Path, is.Code, is.Message)
		}
	}
	// Output:
	// 0 issues
	// 3 issues
	//   "/subject" required: missing required property "subject"
	//   "/to/0" pattern: expected a value matching pattern "^[^@\\s]+@[^@\\s]+$", found "ops(at)example.com"
	//   "/cc" additionalProperties: property "cc" is not allowed
	// error: invalid_request: the arguments must be a JSON object (expected the arguments as an object, found array)
}
