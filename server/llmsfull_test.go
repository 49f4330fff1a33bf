package server

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/server/internal/golden"
)

// llmsFullHead opens /llms-full.txt.
const llmsFullHead = `# preflight — complete guide for agents

> preflight is a deterministic pre-execution checker for AI agents. Check (free) validates a proposed HTTP request body against a JSON Schema and can add proceed/abort advice; Decide tells you whether to make a web search or page fetch: allow, block, reuse, defer or advise. Decide costs $0.002 USDC per settled HTTP call (x402 v2) when the operator charges; both are free over MCP. preflight never executes calls, never fetches URLs and keeps no state.

This is the whole guide in one text: the reference (the same as {site_url}/docs) followed by
a step-by-step procedure for agents (the same as the Agent Skills file at
{site_url}/.well-known/agent-skills/preflight/SKILL.md). Machine-readable API description:
{base_url}/openapi.json. Index: {site_url}/llms.txt.
`

var (
	pointerParagraph = regexp.MustCompile(`(?s)\nThis page is the complete reference\..*?\n\n`)
	contentsSection  = regexp.MustCompile(`(?s)\n## Contents\n.*?\n(## )`)
	anchorLink       = regexp.MustCompile(`\[([^\]]+)\]\(#[^)]+\)`)
	heading          = regexp.MustCompile(`(?m)^(#+) `)
)

// buildLLMSFull assembles llms-full.txt from the guide (index.md) and the
// Agent Skills procedure (SKILL.md): the guide without its title, pointer
// paragraph, contents and in-page links, then the procedure with its
// headings one level down.
func buildLLMSFull(guide, skill string) string {
	_, body, _ := strings.Cut(guide, "\n")
	body = pointerParagraph.ReplaceAllString(body, "\n")
	body = contentsSection.ReplaceAllString(body, "\n$1")
	body = strings.TrimSpace(anchorLink.ReplaceAllString(body, "$1")) + "\n"

	parts := strings.SplitN(skill, "---", 3) // front matter
	_, sk, _ := strings.Cut(parts[len(parts)-1], "\n## ")
	sk = heading.ReplaceAllString("## "+sk, "#$1 ")

	return llmsFullHead + "\n" + body + "\n## Agent procedure\n\nThe steps below say when to call preflight and what to do with each answer.\n\n" +
		strings.TrimSpace(sk) + "\n"
}

// TestLLMSFullUpToDate keeps site/llms-full.txt in step with index.md and
// SKILL.md; run go test -update to rewrite it.
func TestLLMSFullUpToDate(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("site", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	golden.Check(t, filepath.Join("site", "llms-full.txt"), []byte(buildLLMSFull(read("index.md"), read("SKILL.md"))))
}
