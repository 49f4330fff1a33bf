package agenttest

import (
	"os"
	"regexp"
	"strings"
)

// goBlock is a Go code block of a Markdown file.
var goBlock = regexp.MustCompile("(?s)```go\n(.*?)```")

// ExcerptsOf checks that every Go block of the Markdown file readme is
// an excerpt of the Go file src: its lines, spaces around them ignored,
// are lines of src in the same order (lines of src may be left out), so
// that an adapter's README shows code its Example compiles and runs. It
// fails when readme has no Go block.
func ExcerptsOf(t T, readme, src string) {
	t.Helper()
	md, err := os.ReadFile(readme)
	if err != nil {
		t.Fatalf("%v", err)
	}
	code, err := os.ReadFile(src)
	if err != nil {
		t.Fatalf("%v", err)
	}
	var lines []string
	for _, l := range strings.Split(string(code), "\n") {
		lines = append(lines, strings.TrimSpace(l))
	}
	blocks := goBlock.FindAllStringSubmatch(string(md), -1)
	if len(blocks) == 0 {
		t.Fatalf("%s has no Go block", readme)
	}
	for _, b := range blocks {
		at := 0
		for _, l := range strings.Split(b[1], "\n") {
			l = strings.TrimSpace(l)
			if l == "" {
				continue
			}
			for at < len(lines) && lines[at] != l {
				at++
			}
			if at == len(lines) {
				t.Fatalf("%s shows %q, which is not a line of %s after the block's previous ones", readme, l, src)
			}
			at++
		}
	}
}
