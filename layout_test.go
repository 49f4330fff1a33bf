package preflight

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestSatellitesImportOnlyPublicPackages: a module of this repository
// other than the core (a framework adapter, a ledger store, the
// benchmarks) imports no internal/ package of the core, so that a
// published pair of versions always builds: the core's internal packages
// may change in any release. examples/ is checked by its own test.
func TestSatellitesImportOnlyPublicPackages(t *testing.T) {
	const internal = "github.com/agentpreflight/preflight/internal/"
	var modules []string
	var found []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", "testdata", ".git":
				return filepath.SkipDir
			}
			if path == "examples" {
				return filepath.SkipDir
			}
			if path != "." {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					modules = append(modules, filepath.ToSlash(path))
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || moduleOf(path, modules) == "" {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if strings.HasPrefix(p, internal) {
				found = append(found, filepath.ToSlash(path)+" imports "+p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"agent/adkguard", "agent/einoguard", "agent/genkitguard", "agent/redisledger", "benchmarks"} {
		if !slices.Contains(modules, m) {
			t.Errorf("no module %s found (modules: %v): the check would miss it", m, modules)
		}
	}
	for _, f := range found {
		t.Errorf("%s: a module outside the core may import only the core's public packages", f)
	}
}

// moduleOf is the module of modules whose directory holds path, or "" for
// the core. WalkDir visits a directory before its files, so a file's
// module is already listed.
func moduleOf(path string, modules []string) string {
	path = filepath.ToSlash(path)
	for _, m := range modules {
		if strings.HasPrefix(path, m+"/") {
			return m
		}
	}
	return ""
}
