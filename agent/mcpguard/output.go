package mcpguard

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/agentpreflight/preflight"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// outputSchemas compiles the outputSchema of each listed tool that has one
// (with format asserted when Options.AssertFormat says so). A schema that
// cannot be used is left out, with a warning naming the tool and the
// reason: that tool's results are not checked.
func (g *guard) outputSchemas(listed []*mcp.Tool) map[string]*preflight.Catalog {
	if g.opts.NoOutputCheck {
		return nil
	}
	out := map[string]*preflight.Catalog{}
	for _, t := range listed {
		if t == nil || t.OutputSchema == nil || out[t.Name] != nil {
			continue
		}
		b, err := json.Marshal(t.OutputSchema)
		var c *preflight.Catalog
		if err == nil {
			c, err = preflight.NewCatalog(preflight.Operation{Provider: "p", Name: "n", Schema: b, AssertFormat: g.opts.AssertFormat})
		}
		if err != nil {
			g.opts.Logger.Warn("mcpguard: a tool's outputSchema cannot be used; its results are not checked",
				"tool", t.Name, "reason", schemaReason(err))
			continue
		}
		out[t.Name] = c
	}
	return out
}

// checkOutput checks the structuredContent of result (read from a fresh
// result of tool name by readResult), against the tool's listed outputSchema, and returns what does
// not match (nil when all does, when the result is an error, or when the
// tool declares no usable outputSchema), each issue's path under
// "/structuredContent". It never blocks anything: each mismatch is logged
// as a warning naming the tool, for the caller to report.
func (g *guard) checkOutput(st *session, name string, result resultFacts) []preflight.Issue {
	st.mu.Lock()
	c := st.outputs[name]
	st.mu.Unlock()
	if c == nil || result.isError {
		return nil
	}
	var issues []preflight.Issue
	if len(result.structured) == 0 || string(result.structured) == "null" {
		issues = []preflight.Issue{{Path: "/structuredContent", Code: preflight.IssueRequired,
			Message: "expected structuredContent: the tool declares an outputSchema"}}
	} else {
		d, err := c.Decide(&preflight.ToolCallRequest{RunID: "output", StepID: "output",
			Tool:   preflight.ToolCall{Provider: "p", Operation: "n", Request: result.structured, EstimatedExternalCostUSD: "0", EstimatedModelCostUSD: "0"},
			Budget: preflight.Budget{RemainingUSD: "1", ReservedUSD: "0", MaxToolCallsRemaining: "1"}})
		var pe *preflight.Error
		switch {
		case errors.As(err, &pe):
			issues = pe.Details
		case err != nil:
			issues = []preflight.Issue{{Path: "/structuredContent", Code: preflight.IssueInvalidJSON, Message: err.Error()}}
		default:
			issues = d.Issues
		}
		for i := range issues {
			issues[i].Path = "/structuredContent" + strings.TrimPrefix(issues[i].Path, "/tool/request")
		}
	}
	if len(issues) > 0 {
		g.opts.Logger.Warn("mcpguard: a tool's result does not match its outputSchema; it is passed on as it is",
			"tool", name, "issues", len(issues), "first", issues[0].Path+": "+issues[0].Message)
	}
	return issues
}
