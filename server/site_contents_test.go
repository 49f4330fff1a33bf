package server

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"

	"github.com/agentpreflight/preflight/server/internal/golden"
)

// contentsSectionBody matches the list under "## Contents" in index.md.
var contentsSectionBody = regexp.MustCompile(`(?s)\n## Contents\n\n(.*?)\n\n## `)

// guideContents builds the Contents list of the guide from its h2 and h3
// headings (h3 nested under their h2), linking each to the id the renderer
// gives it.
func guideContents(t *testing.T, guide string) string {
	t.Helper()
	src := []byte(guide)
	doc := newSite(nil).md.Parser().Parse(text.NewReader(src))
	var b strings.Builder
	err := ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		h, ok := n.(*ast.Heading)
		if !entering || !ok || h.Level < 2 || h.Level > 3 {
			return ast.WalkContinue, nil
		}
		var title strings.Builder
		for i := 0; i < h.Lines().Len(); i++ {
			seg := h.Lines().At(i)
			title.Write(seg.Value(src))
		}
		if title.String() == "Contents" {
			return ast.WalkSkipChildren, nil
		}
		id, _ := h.AttributeString("id")
		if h.Level == 3 {
			b.WriteString("  ")
		}
		b.WriteString("- [" + strings.TrimSpace(title.String()) + "](#" + string(id.([]byte)) + ")\n")
		return ast.WalkSkipChildren, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// TestGuideContents requires the guide's Contents list to name every h2 and
// h3 heading, in order, with the ids /docs gives them; go test -update
// rewrites it (and then llms-full.txt must be refreshed too).
func TestGuideContents(t *testing.T) {
	path := filepath.Join("site", "index.md")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	guide := string(raw)
	m := contentsSectionBody.FindStringSubmatchIndex(guide)
	if m == nil {
		t.Fatal(`index.md has no "## Contents" list`)
	}
	fresh := guide[:m[2]] + guideContents(t, guide) + guide[m[3]:]
	golden.Check(t, path, []byte(fresh)) // -update rewrites the list; then refresh llms-full.txt too
}
