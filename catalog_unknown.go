package preflight

import (
	"github.com/agentpreflight/preflight/internal/clip"
	"slices"
	"strconv"
	"strings"
)

// maxListedOperations is how many catalog operations an unknown-operation
// issue names before it summarizes the rest.
const maxListedOperations = 20

// unknownIssues explains an operation the catalog lacks: what was asked,
// what the catalog has and, when an operation is one edit away, which.
func (c *Catalog) unknownIssues(t *ToolCall) []Issue {
	path := "/tool/provider"
	for _, e := range c.ops {
		if e.op.Provider == t.Provider {
			path = "/tool/operation"
			break
		}
	}
	var b strings.Builder
	b.WriteString("the catalog has no operation " + strconv.Quote(clip.String(t.Operation)) + " for provider " +
		strconv.Quote(clip.String(t.Provider)) + "; it has ")
	for i, e := range c.ops {
		if i == maxListedOperations {
			b.WriteString(" and " + strconv.Itoa(len(c.ops)-i) + " more")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(e.op.Provider + "/" + e.op.Name))
	}
	if len(c.ops) == 0 {
		b.WriteString("no operations")
	}
	var owners []string
	for _, e := range c.ops {
		if e.op.Provider != t.Provider && (e.op.Name == t.Operation || slices.Contains(e.op.Aliases, t.Operation)) {
			owners = append(owners, e.op.Provider)
		}
	}
	if len(owners) > 0 {
		b.WriteString("; " + strconv.Quote(clip.String(t.Operation)) + " is an operation of provider " + quoteOr(owners))
	}
	issues := []Issue{{Path: path, Code: IssueUnknownOperation, Message: b.String()}}
	if near := c.similar(t.Provider, t.Operation); len(near) > 0 {
		msg := "did you mean " + quoteOr(near) + "? (one edit away; the call is not decided as that operation)"
		issues = append(issues, Issue{Path: path, Code: IssueSimilarOperation, Message: msg})
	}
	return issues
}

// similar returns the "provider/name" of every operation (by name or
// alias) that is one edit away from provider/operation, in catalog order.
func (c *Catalog) similar(provider, operation string) []string {
	var out []string
	for _, e := range c.ops {
		for _, name := range append([]string{e.op.Name}, e.op.Aliases...) {
			if oneEditApart(provider+"/"+operation, e.op.Provider+"/"+name) {
				out = append(out, e.op.Provider+"/"+name)
			}
		}
	}
	return out
}

func quoteOr(names []string) string {
	var b strings.Builder
	for i, n := range names {
		switch {
		case i == 0:
		case i == len(names)-1:
			b.WriteString(" or ")
		default:
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(n))
	}
	return b.String()
}

// oneEditApart reports whether a and b differ by exactly one edit: one
// character inserted, deleted or replaced, two adjacent characters swapped,
// or only in letter case ("WebSearch" for "websearch").
func oneEditApart(a, b string) bool {
	if a == b {
		return false
	}
	if strings.EqualFold(a, b) { // stops at the first difference
		return true
	}
	// A rune is at most 4 bytes, so one edit changes the length by at most
	// 4 bytes: long input is rejected without looking further.
	if d := len(a) - len(b); d > 4 || d < -4 {
		return false
	}
	x, y := []rune(a), []rune(b)
	if len(x) > len(y) {
		x, y = y, x
	}
	if len(y)-len(x) > 1 {
		return false
	}
	i := 0
	for i < len(x) && x[i] == y[i] {
		i++
	}
	if len(x) == len(y) {
		if string(x[i+1:]) == string(y[i+1:]) { // replaced
			return true
		}
		return i+1 < len(x) && x[i] == y[i+1] && x[i+1] == y[i] && string(x[i+2:]) == string(y[i+2:]) // swapped
	}
	return string(x[i:]) == string(y[i+1:]) // inserted
}
