package preflight_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// readmeExample matches a Go block of README.md copied from an Example
// function: the marker names the function, and the block is its body.
var readmeExample = regexp.MustCompile("(?s)<!-- EXAMPLE: (Example[A-Za-z0-9_]*) -->\n```go\n(.*?)```\n<!-- END EXAMPLE -->")

// TestReadmeExamples keeps README.md's Go blocks compiled and run: each
// marked block must be the body of the Example function it names, one
// level of indentation removed, so that go test runs what the README shows
// and checks the output it prints.
func TestReadmeExamples(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	bodies := exampleBodies(t)
	found := readmeExample.FindAllStringSubmatch(string(readme), -1)
	if len(found) == 0 {
		t.Fatal("README.md has no <!-- EXAMPLE: ExampleName --> block")
	}
	if n := strings.Count(string(readme), "<!-- EXAMPLE:"); n != len(found) {
		t.Errorf("README.md has %d EXAMPLE markers but %d well-formed blocks (marker, ```go block, <!-- END EXAMPLE -->)", n, len(found))
	}
	for _, m := range found {
		name, block := m[1], m[2]
		body, ok := bodies[name]
		if !ok {
			t.Errorf("README.md copies %s, which no _test.go file of this package defines", name)
			continue
		}
		if diff := cmp.Diff(body, block); diff != "" {
			t.Errorf("README.md's copy of %s differs from the function's body (-function +readme):\n%s", name, diff)
		}
	}
}

// exampleBodies returns the body of every Example function of this
// directory's test files, without its braces and one tab of indentation.
func exampleBodies(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	bodies := map[string]string{}
	fset := token.NewFileSet()
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Example") || fn.Body == nil {
				continue
			}
			open, end := fset.Position(fn.Body.Lbrace).Offset, fset.Position(fn.Body.Rbrace).Offset
			inner := strings.TrimPrefix(string(src[open+1:end]), "\n")
			var b strings.Builder
			for _, line := range strings.SplitAfter(inner, "\n") {
				b.WriteString(strings.TrimPrefix(line, "\t"))
			}
			bodies[fn.Name.Name] = b.String()
		}
	}
	return bodies
}
