package server

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSiteDocuments(t *testing.T) {
	c := newAPIClient(t, New(testConfig))
	sub := strings.NewReplacer("{base_url}", testConfig.BaseURL, "{site_url}", testConfig.SiteURL)
	s := newSite(nil)
	tests := []struct {
		path, contentType, want string
	}{
		{"/docs/index.md", typeMarkdown, sub.Replace(s.index)},
		{"/index.md", typeMarkdown, sub.Replace(s.index)},
		{"/llms.txt", typeText, sub.Replace(s.llms)},
		{"/llms-full.txt", typeText, sub.Replace(s.llmsFull)},
		{"/.well-known/agent-skills/preflight/SKILL.md", typeMarkdown, sub.Replace(s.skill)},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			c.t = t
			x := c.do("GET", tc.path, nil)
			if x.Status != 200 || x.Header.Get("Content-Type") != tc.contentType {
				t.Fatalf("%d %q", x.Status, x.Header.Get("Content-Type"))
			}
			if diff := cmp.Diff(tc.want, string(x.Body)); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			if strings.Contains(string(x.Body), "{base_url}") || strings.Contains(string(x.Body), "{site_url}") {
				t.Error("a placeholder was left unsubstituted")
			}
		})
	}
}

func TestDocsHTML(t *testing.T) {
	c := newAPIClient(t, New(testConfig))
	x := c.do("GET", "/docs", nil)
	if x.Status != 200 || x.Header.Get("Content-Type") != typeHTML {
		t.Fatalf("%d %q", x.Status, x.Header.Get("Content-Type"))
	}
	page := string(x.Body)
	for _, want := range []string{"<!DOCTYPE html>", "<title>", "<main>", `href="/docs/index.md"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(newSite(nil).index, "\n# ") || strings.HasPrefix(newSite(nil).index, "# ") {
		if !strings.Contains(page, "<h1") {
			t.Error("the guide's title heading was not rendered")
		}
	}
	if strings.Contains(page, "{base_url}") || strings.Contains(page, "%7Bbase_url%7D") {
		t.Error("a placeholder was left unsubstituted")
	}
	// The page is cached; the cached copy must equal a fresh rendering of
	// the substituted guide.
	s := newSite(nil)
	sub := strings.NewReplacer("{base_url}", testConfig.BaseURL, "{site_url}", testConfig.SiteURL)
	direct, err := s.renderHTML(sub.Replace(s.index))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(direct), page); diff != "" {
		t.Errorf("cached page differs from a direct rendering (-direct +served):\n%s", diff)
	}
}

func TestDocsDeriveBaseURL(t *testing.T) {
	c := newAPIClient(t, New(Config{}))
	x := c.do("GET", "/openapi.json", nil)
	var doc struct {
		Servers []struct{ URL string }   `json:"servers"`
		Info    struct{ Version string } `json:"info"`
	}
	if err := json.Unmarshal(x.Body, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Servers) != 1 || doc.Servers[0].URL != c.srv.URL || doc.Info.Version != "0.3.0" {
		t.Errorf("servers %+v version %q; want the request-derived %s and 0.3.0", doc.Servers, doc.Info.Version, c.srv.URL)
	}
}

func TestAgentSkillsIndex(t *testing.T) {
	c := newAPIClient(t, New(testConfig))
	skill := c.do("GET", "/.well-known/agent-skills/preflight/SKILL.md", nil)
	x := c.do("GET", "/.well-known/agent-skills/index.json", nil)
	var idx struct {
		Schema string `json:"$schema"`
		Skills []struct {
			Name, Type, Description, URL, Digest string
		} `json:"skills"`
	}
	if err := json.Unmarshal(x.Body, &idx); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(skill.Body)
	if len(idx.Skills) != 1 {
		t.Fatalf("index %s", x.Body)
	}
	got := idx.Skills[0]
	if got.Type != "skill-md" || got.Name == "" || got.Description == "" {
		t.Errorf("entry %+v", got)
	}
	// The URL resolves against the index's own, wherever the site lives.
	ref, err := url.Parse(got.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, index := range []string{"https://h.example/.well-known/agent-skills/index.json", "https://h.example/pre/.well-known/agent-skills/index.json"} {
		base, _ := url.Parse(index)
		if r, want := base.ResolveReference(ref).String(), strings.TrimSuffix(index, "index.json")+"preflight/SKILL.md"; r != want {
			t.Errorf("skill URL %q from %s resolves to %s, want %s", got.URL, index, r, want)
		}
	}
	if want := "sha256:" + hex.EncodeToString(sum[:]); got.Digest != want {
		t.Errorf("digest %s, want %s (the served SKILL.md)", got.Digest, want)
	}
}

func TestAPICatalog(t *testing.T) {
	c := newAPIClient(t, New(testConfig))
	x := c.do("GET", "/.well-known/api-catalog", nil)
	if ct := x.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/linkset+json") {
		t.Errorf("Content-Type %q", ct)
	}
	checkGolden(t, "api_catalog", x.render())
}

func TestFrontMatter(t *testing.T) {
	for _, tc := range []struct{ name, doc, wantName, wantDesc string }{
		{"plain", "---\nname: a\ndescription: does b: c\n---\n# x", "a", "does b: c"},
		{"quoted", "---\nname: \"a\"\ndescription: 'b'\n---\n", "a", "b"},
		{"no front matter", "# a\nname: x\n", "", ""},
		{"empty", "", "", ""},
	} {
		name, desc := frontMatter(tc.doc)
		if name != tc.wantName || desc != tc.wantDesc {
			t.Errorf("%s: got %q %q, want %q %q", tc.name, name, desc, tc.wantName, tc.wantDesc)
		}
	}
}
