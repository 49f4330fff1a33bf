package server

// TestDocsInBrowser loads /docs in a real headless Chromium (Debian's
// chromium package) through the DevTools protocol, at a phone's width and a
// desktop's, and checks what a reader sees: nothing is wider than the
// viewport (wide tables scroll inside their own box), and every in-page
// link leads to an element. With -update it also writes the screenshots
// server/site/docs-390.png and docs-1280.png that the README links.

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentpreflight/preflight/server/internal/golden"
	"github.com/agentpreflight/preflight/server/internal/testpart"
)

// chromiumPath returns Debian's chromium, or "".
func chromiumPath() string {
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	return ""
}

// docsLayout is what the page reports about itself at one width.
type docsLayout struct {
	ViewportWidth int      `json:"viewportWidth"`
	ScrollWidth   int      `json:"scrollWidth"`
	TooWide       []string `json:"tooWide"`       // elements reaching past the viewport
	InPageLinks   int      `json:"inPageLinks"`   // links to #fragment
	Broken        []string `json:"broken"`        // #fragments with no element
	ScrollBoxes   int      `json:"scrollBoxes"`   // tables wrapped in their own scroll box
	Overflowing   int      `json:"overflowing"`   // of those, how many scroll at this width
	SideContents  bool     `json:"sideContents"`  // the contents column is shown
	ContentsItems int      `json:"contentsItems"` // links in the Contents list
	Headings      int      `json:"headings"`      // h2 and h3 headings it should list
}

// docsLayoutScript measures the page. An element inside a table's scroll
// box may be wider than the viewport (that is what the box is for); the box
// itself may not.
const docsLayoutScript = `(() => {
  const vw = document.documentElement.clientWidth;
  const describe = el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
    (el.className ? '.' + String(el.className).split(' ').join('.') : '') +
    ' "' + (el.textContent || '').trim().slice(0, 40) + '"';
  const tooWide = [];
  for (const el of document.querySelectorAll('body *')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    const box = el.closest('.table-scroll');
    if (box && box !== el) continue;
    if (r.left < -0.5 || r.right > vw + 0.5) tooWide.push(describe(el) + ' spans ' + Math.round(r.left) + '..' + Math.round(r.right));
  }
  const links = [...document.querySelectorAll('a[href^="#"]')];
  const broken = links.map(a => a.getAttribute('href'))
    .filter(h => !document.getElementById(decodeURIComponent(h.slice(1))));
  const boxes = [...document.querySelectorAll('.table-scroll')];
  const side = document.querySelector('nav.side');
  const contents = document.getElementById('contents');
  const list = contents && contents.nextElementSibling;
  return {
    viewportWidth: vw,
    scrollWidth: document.documentElement.scrollWidth,
    tooWide: tooWide.slice(0, 20),
    inPageLinks: links.length,
    broken: broken,
    scrollBoxes: boxes.length,
    overflowing: boxes.filter(b => b.scrollWidth > b.clientWidth).length,
    sideContents: !!side && side.getBoundingClientRect().width > 0,
    contentsItems: list ? list.querySelectorAll('a[href^="#"]').length : 0,
    headings: document.querySelectorAll('main h2:not(#contents), main h3').length,
  };
})()`

func TestDocsInBrowser(t *testing.T) {
	chromium := chromiumPath()
	if chromium == "" {
		testpart.Missing(t, "chromium is not installed; on Debian: apt-get install chromium")
	}
	// A fixed public address, so the screenshots do not change with the
	// test server's port.
	ts := httptest.NewServer(New(Config{BaseURL: "https://preflight.example.com"}))
	defer ts.Close()

	// A guard against a hang, not a timing assertion.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ctx, cancel = chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromium),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	defer cancel()
	ctx, cancel = chromedp.NewContext(ctx)
	defer cancel()

	for _, vp := range []struct {
		name          string
		width, height int64
		mobile        bool
		wantSide      bool
	}{
		{"390", 390, 844, true, false},
		{"1280", 1280, 800, false, true},
	} {
		t.Run(vp.name, func(t *testing.T) {
			opts := []chromedp.EmulateViewportOption{chromedp.EmulateScale(1)}
			if vp.mobile {
				opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulatePortrait)
			}
			err := chromedp.Do(ctx,
				chromedp.EmulateViewport(vp.width, vp.height, opts...),
				chromedp.Navigate(ts.URL+"/docs"),
				chromedp.WaitReady("main"),
			)
			if err != nil {
				t.Fatalf("load /docs at %d px: %v", vp.width, err)
			}
			got, err := chromedp.Run(ctx, chromedp.Evaluate[docsLayout](docsLayoutScript))
			if err != nil {
				t.Fatalf("measure the page: %v", err)
			}
			t.Logf("%d px: %+v", vp.width, got)
			if got.ViewportWidth != int(vp.width) {
				t.Errorf("viewport is %d px wide, want %d", got.ViewportWidth, vp.width)
			}
			if got.ScrollWidth > got.ViewportWidth {
				t.Errorf("the page is %d px wide in a %d px viewport: it scrolls sideways", got.ScrollWidth, got.ViewportWidth)
			}
			for _, el := range got.TooWide {
				t.Errorf("wider than the %d px viewport: %s", got.ViewportWidth, el)
			}
			for _, href := range got.Broken {
				t.Errorf("in-page link %s leads to no element", href)
			}
			if got.InPageLinks < 40 {
				t.Errorf("%d in-page links; the contents alone should have more than 40", got.InPageLinks)
			}
			if got.ContentsItems != got.Headings || got.Headings < 20 {
				t.Errorf("the Contents list has %d links for %d h2 and h3 headings; want one for each", got.ContentsItems, got.Headings)
			}
			if got.ScrollBoxes < 10 {
				t.Errorf("%d tables in scroll boxes; the guide has more than 10 tables", got.ScrollBoxes)
			}
			if vp.mobile && got.Overflowing == 0 {
				t.Errorf("no table scrolls at %d px: the check of scroll boxes proved nothing", vp.width)
			}
			if got.SideContents != vp.wantSide {
				t.Errorf("contents column shown = %v, want %v", got.SideContents, vp.wantSide)
			}

			// The "Top" link must bring the reader back from the end.
			top, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`(async () => {
  document.documentElement.style.scrollBehavior = 'auto';
  window.scrollTo(0, document.documentElement.scrollHeight);
  document.querySelector('a.top').click();
  await new Promise(r => setTimeout(r, 50));
  return window.scrollY;
})()`, chromedp.EvalAwaitPromise))
			if err != nil {
				t.Fatalf("follow the Top link: %v", err)
			}
			if top != 0 {
				t.Errorf("after the Top link the page is scrolled to %v, want 0", top)
			}

			if golden.Updating() {
				writeDocsScreenshot(ctx, t, vp.name)
			}
		})
	}
}

// writeDocsScreenshot saves what a reader first sees at this width; at the
// phone's width it scrolls to the Errors table first, to show a table in
// its scroll box.
func writeDocsScreenshot(ctx context.Context, t *testing.T, width string) {
	t.Helper()
	if width == "390" {
		if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById('limits').scrollIntoView()`)); err != nil {
			t.Fatal(err)
		}
	} else if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`)); err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join("site", "docs-"+strings.TrimSpace(width)+".png")
	if err := os.WriteFile(name, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d bytes)", name, len(png))
}
