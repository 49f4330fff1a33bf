// Package examples_test checks what every program under examples/ may
// import: the standard library, public packages of this module and the
// module's existing requirements, never an internal package, so that a user
// can copy an example out of the repository and build it.
package examples_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/agentpreflight/preflight"

func TestExamplesImportOnlyPublicPackages(t *testing.T) {
	fset := token.NewFileSet()
	dirs := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && path != ".") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dirs[filepath.Dir(path)] = true
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return err
			}
			if internal(p) {
				t.Errorf("%s imports %s: examples use only what a user can import", fset.Position(imp.Pos()), p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The walk must have seen the examples, or it proves nothing.
	for _, ex := range []string{"agentloop", "replay"} {
		if !dirs[ex] {
			t.Errorf("no Go files found in examples/%s", ex)
		}
	}
}

// internal reports whether p is an internal package of this module (at any
// depth: internal/..., server/internal/...).
func internal(p string) bool {
	if p != module && !strings.HasPrefix(p, module+"/") {
		return false
	}
	return slices.Contains(strings.Split(p, "/"), "internal")
}

func TestInternal(t *testing.T) {
	for p, want := range map[string]bool{
		module + "/internal/cli":          true,
		module + "/internal":              true,
		module + "/server/internal/site":  true,
		module + "/agent":                 false,
		module + "/server":                false,
		"golang.org/x/net/internal/socks": false, // not this module's
		"encoding/json":                   false,
	} {
		if got := internal(p); got != want {
			t.Errorf("internal(%q) = %v, want %v", p, got, want)
		}
	}
}
