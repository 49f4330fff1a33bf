package server

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"html/template"
	"net/http"
	"strings"
	"sync"

	"github.com/agentpreflight/preflight"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
)

// siteFiles holds the informational documents, written in Markdown and plain
// text. "{base_url}" and "{site_url}" in them are replaced when served.
//
//go:embed site
var siteFiles embed.FS

// The informational routes.
const (
	pathDocs         = "/docs"
	pathDocsMarkdown = "/docs/index.md"
	pathIndexMD      = "/index.md"
	pathLLMs         = "/llms.txt"
	pathLLMsFull     = "/llms-full.txt"
	pathAPICatalog   = "/.well-known/api-catalog"
	pathSkillsIndex  = "/.well-known/agent-skills/index.json"
	pathSkill        = "/.well-known/agent-skills/preflight/SKILL.md"
)

// sitePaths lists the informational routes; all are GET (and HEAD).
var sitePaths = []string{
	pathDocs, pathDocsMarkdown, pathIndexMD, pathLLMs, pathLLMsFull,
	pathAPICatalog, pathSkillsIndex, pathSkill,
}

// The media types of the informational documents.
const (
	typeMarkdown = "text/markdown; charset=utf-8"
	typeText     = "text/plain; charset=utf-8"
	typeHTML     = "text/html; charset=utf-8"
	typeLinkset  = `application/linkset+json; profile="https://www.rfc-editor.org/info/rfc9727"`
)

// site holds the embedded documents and the Markdown renderer.
type site struct {
	index, llms, llmsFull, skill string
	md                           goldmark.Markdown
	// pages caches the rendered guide per (base URL, site URL) pair: one
	// entry when Config.BaseURL is set, a few when addresses are derived
	// from Host headers. It never grows past maxCachedPages.
	mu    sync.Mutex
	pages map[[2]string][]byte
}

// newSite loads the embedded documents. A missing file is served empty.
// A non-nil catalog is listed at the end of the guide and the llms files.
func newSite(catalog *preflight.Catalog) *site {
	read := func(name string) string {
		b, _ := siteFiles.ReadFile("site/" + name)
		return string(b)
	}
	s := &site{
		index:    read("index.md"),
		llms:     read("llms.txt"),
		llmsFull: read("llms-full.txt"),
		skill:    read("SKILL.md"),
		md: goldmark.New(
			goldmark.WithExtensions(extension.GFM),
			goldmark.WithParserOptions(parser.WithAutoHeadingID()),
		),
	}
	s.pages = map[[2]string][]byte{}
	if catalog != nil {
		list := operationsMarkdown(catalog)
		s.index += list
		s.llms += list
		s.llmsFull += list
	}
	return s
}

// maxCachedPages bounds the rendered-guide cache.
const maxCachedPages = 16

// docsPage returns the guide rendered as HTML with the placeholders set to
// base and siteURL.
func (s *site) docsPage(base, siteURL string) ([]byte, error) {
	key := [2]string{base, siteURL}
	s.mu.Lock()
	page, ok := s.pages[key]
	s.mu.Unlock()
	if ok {
		return page, nil
	}
	sub := strings.NewReplacer("{base_url}", base, "{site_url}", siteURL)
	page, err := s.renderHTML(sub.Replace(s.index))
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if len(s.pages) < maxCachedPages {
		s.pages[key] = page
	}
	s.mu.Unlock()
	return page, nil
}

// serveSite answers GET on the informational routes.
func (h *handler) serveSite(w http.ResponseWriter, r *http.Request) {
	base, siteURL := h.baseURL(r), h.siteURL(r)
	sub := strings.NewReplacer("{base_url}", base, "{site_url}", siteURL)
	var (
		body        []byte
		contentType string
	)
	switch r.URL.Path {
	case pathDocs:
		page, err := h.site.docsPage(base, siteURL)
		if err != nil {
			h.writeLibraryError(w, r, err)
			return
		}
		body, contentType = page, typeHTML
	case pathDocsMarkdown, pathIndexMD:
		body, contentType = []byte(sub.Replace(h.site.index)), typeMarkdown
	case pathLLMs:
		body, contentType = []byte(sub.Replace(h.site.llms)), typeText
	case pathLLMsFull:
		body, contentType = []byte(sub.Replace(h.site.llmsFull)), typeText
	case pathSkill:
		body, contentType = []byte(sub.Replace(h.site.skill)), typeMarkdown
	case pathSkillsIndex:
		body, contentType = h.site.skillsIndex(sub.Replace(h.site.skill)), "application/json"
	case pathAPICatalog:
		body, contentType = apiCatalog(base, siteURL), typeLinkset
		w.Header().Set("Link", `<`+siteURL+pathAPICatalog+`>; rel="api-catalog"`) // published on the site (RFC 9727)
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

// pageTemplate wraps the rendered guide in a small HTML page.
var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<link rel="alternate" type="text/markdown" href="/docs/index.md">
<style>
body{max-width:50rem;margin:2rem auto;padding:0 1rem;font:16px/1.55 system-ui,sans-serif;color:#1b1b1b}
pre,code{font:14px ui-monospace,monospace;background:#f4f4f4}
pre{padding:.8rem;overflow-x:auto}
table{border-collapse:collapse}
th,td{border:1px solid #ccc;padding:.3rem .6rem;text-align:left}
</style>
</head>
<body>
<main>
{{.Body}}</main>
</body>
</html>
`))

// renderHTML renders the Markdown guide as an HTML page. Raw HTML inside the
// Markdown is not passed through.
func (s *site) renderHTML(markdown string) ([]byte, error) {
	var body bytes.Buffer
	if err := s.md.Convert([]byte(markdown), &body); err != nil {
		return nil, err
	}
	title := "preflight"
	for _, line := range strings.Split(markdown, "\n") {
		if t, ok := strings.CutPrefix(line, "# "); ok {
			title = strings.TrimSpace(t)
			break
		}
	}
	var page bytes.Buffer
	err := pageTemplate.Execute(&page, struct {
		Title string
		Body  template.HTML
	}{title, template.HTML(body.String())})
	return page.Bytes(), err
}

// skillsIndex is the Agent Skills discovery index (draft v0.2.0) listing the
// one skill, with the SHA-256 digest of exactly the bytes served for it.
func (s *site) skillsIndex(skill string) []byte {
	name, desc := frontMatter(skill)
	if name == "" {
		name = "preflight"
	}
	if desc == "" {
		desc = "Check a paid tool call or API request before spending money on it."
	}
	sum := sha256.Sum256([]byte(skill))
	type entry struct {
		Name        string `json:"name"`
		Type        string `json:"type"`
		Description string `json:"description"`
		URL         string `json:"url"`
		Digest      string `json:"digest"`
	}
	b, _ := json.Marshal(struct {
		Schema string  `json:"$schema"`
		Skills []entry `json:"skills"`
	}{
		Schema: "https://schemas.agentskills.io/discovery/0.2.0/schema.json",
		Skills: []entry{{name, "skill-md", desc, pathSkill, "sha256:" + hex.EncodeToString(sum[:])}},
	})
	return b
}

// frontMatter returns the name and description of a SKILL.md's YAML front
// matter, read as simple "key: value" lines (quotes removed).
func frontMatter(doc string) (name, desc string) {
	sc := bufio.NewScanner(strings.NewReader(doc))
	if !sc.Scan() || strings.TrimSpace(sc.Text()) != "---" {
		return "", ""
	}
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "---" {
			break
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.Trim(strings.TrimSpace(v), `"'`)
		switch strings.TrimSpace(k) {
		case "name":
			name = v
		case "description":
			desc = v
		}
	}
	return name, desc
}

// apiCatalog is the RFC 9727 API catalog: an RFC 9264 linkset naming the
// API, its OpenAPI description, its documentation and its health check.
func apiCatalog(base, siteURL string) []byte {
	type link struct {
		Href string `json:"href"`
		Type string `json:"type,omitempty"`
	}
	type context struct {
		Anchor      string `json:"anchor"`
		ServiceDesc []link `json:"service-desc"`
		ServiceDoc  []link `json:"service-doc"`
		Status      []link `json:"status"`
	}
	b, _ := json.Marshal(struct {
		Linkset []context `json:"linkset"`
	}{[]context{{
		Anchor:      base + "/",
		ServiceDesc: []link{{base + "/openapi.json", "application/vnd.oai.openapi+json;version=3.1"}},
		ServiceDoc: []link{
			{siteURL + pathDocs, "text/html"},
			{siteURL + pathDocsMarkdown, "text/markdown"},
		},
		Status: []link{{base + "/health", "application/json"}},
	}}})
	return b
}
