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
//go:embed site/index.md site/llms.txt site/llms-full.txt site/SKILL.md
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

// pageTemplate wraps the rendered guide in a small HTML page that reads at
// any width: tables scroll inside their own box, code wraps, and on a wide
// screen the contents stay in view beside the text. A "Top" link is always
// at hand.
var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<link rel="alternate" type="text/markdown" href="/docs/index.md">
<style>
*,*::before,*::after{box-sizing:border-box}
html{scroll-behavior:smooth;-webkit-text-size-adjust:100%}
body{margin:0;font:16px/1.55 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1b1b1b;background:#fff}
.page{max-width:50rem;margin:0 auto;padding:1rem 1rem 4rem}
main{min-width:0;overflow-wrap:break-word}
h1{font-size:1.8rem;line-height:1.25;margin:.5rem 0 1rem}
h2{font-size:1.4rem;line-height:1.3;margin:2.5rem 0 .75rem;padding-top:.5rem;border-top:1px solid #e3e3e3}
h3{font-size:1.1rem;margin:1.75rem 0 .5rem}
h2,h3{scroll-margin-top:1rem}
a{color:#0b57d0}
code{font:.875em/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:#f2f2f2;border-radius:3px;padding:.05em .25em;overflow-wrap:anywhere}
pre{background:#f2f2f2;border-radius:4px;padding:.75rem;white-space:break-spaces;overflow-wrap:anywhere;max-width:100%}
pre code{padding:0;background:none;font-size:.8125rem}
.table-scroll{max-width:100%;overflow-x:auto;margin:1rem 0;-webkit-overflow-scrolling:touch}
table{border-collapse:collapse;font-size:.9375rem}
th,td{border:1px solid #d0d0d0;padding:.35rem .6rem;text-align:left;vertical-align:top}
th{background:#f7f7f7}
td code{overflow-wrap:normal;white-space:nowrap}
.side{display:none}
.top{position:fixed;right:1rem;bottom:1rem;padding:.4rem .75rem;border:1px solid #c8c8c8;border-radius:1.2rem;background:#fff;color:#1b1b1b;text-decoration:none;font-size:.875rem;box-shadow:0 1px 3px rgba(0,0,0,.15)}
@media (min-width:75rem){
.page{max-width:73rem;display:grid;grid-template-columns:15rem minmax(0,50rem);gap:0 3rem;justify-content:center}
.side{display:block;position:sticky;top:0;align-self:start;max-height:100vh;overflow-y:auto;padding:1.5rem 0 2rem;font-size:.875rem;line-height:1.4}
.side p{font-weight:600;margin:0 0 .5rem}
.side ul{list-style:none;margin:0;padding:0}
.side li{margin:.3rem 0}
.side ul ul{padding-left:.9rem}
.side a{color:#333;text-decoration:none}
.side a:hover{text-decoration:underline}
#contents,#contents+ul{display:none}
}
</style>
</head>
<body id="top">
<div class="page">
{{if .Contents}}<nav class="side" aria-label="Contents">
<p><a href="#top">preflight</a></p>
{{.Contents}}</nav>
{{end}}<main>
{{.Body}}</main>
</div>
<a class="top" href="#top">&uarr; Top</a>
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
	html := body.String()
	// Each table scrolls sideways in its own box, so a wide table never
	// widens the page.
	html = strings.ReplaceAll(html, "<table>", `<div class="table-scroll"><table>`)
	html = strings.ReplaceAll(html, "</table>", "</table></div>")
	var page bytes.Buffer
	err := pageTemplate.Execute(&page, struct {
		Title          string
		Contents, Body template.HTML
	}{title, template.HTML(contentsList(html)), template.HTML(html)})
	return page.Bytes(), err
}

// contentsList returns the list that follows the rendered "Contents"
// heading (nested lists included), or "" if there is none. The page repeats
// it beside the text on wide screens.
func contentsList(html string) string {
	const heading = `<h2 id="contents">Contents</h2>`
	i := strings.Index(html, heading)
	if i < 0 {
		return ""
	}
	rest := html[i+len(heading):]
	start := strings.Index(rest, "<ul>")
	if start < 0 || strings.TrimSpace(rest[:start]) != "" {
		return ""
	}
	depth := 0
	for pos := start; pos < len(rest); {
		open := strings.Index(rest[pos:], "<ul>")
		closing := strings.Index(rest[pos:], "</ul>")
		switch {
		case closing < 0:
			return ""
		case open >= 0 && open < closing:
			depth++
			pos += open + len("<ul>")
		default:
			depth--
			pos += closing + len("</ul>")
			if depth == 0 {
				return rest[start:pos] + "\n"
			}
		}
	}
	return ""
}

// skillURL is the skill's URL in the index, relative to the index itself,
// so that it resolves wherever the site is served from (a root-relative
// URL would miss a site URL with a path).
const skillURL = "preflight/SKILL.md"

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
		Skills: []entry{{name, "skill-md", desc, skillURL, "sha256:" + hex.EncodeToString(sum[:])}},
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
