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

// TestModulesImportOnlyPublicPackages: no file of this repository imports
// an internal package of another module (the core, a framework adapter, a
// ledger store, the MCP guard, the server, the benchmarks), so that a
// published set of versions always builds: a module's internal packages
// may change in any release. examples/ is checked by its own test.
func TestModulesImportOnlyPublicPackages(t *testing.T) {
	const root = "github.com/agentpreflight/preflight"
	var modules []string
	var imports [][2]string // file, imported path below root, for internal packages
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
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			rel, ok := strings.CutPrefix(p, root+"/")
			if !ok || !slices.Contains(strings.Split(rel, "/"), "internal") {
				continue
			}
			imports = append(imports, [2]string{filepath.ToSlash(path), rel})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"agent/adkguard", "agent/anthropicguard", "agent/einoguard", "agent/genkitguard", "agent/langchaingoguard", "agent/mcpgoguard", "agent/mcpguard", "agent/openaiguard", "agent/redisledger", "benchmarks", "server"} {
		if !slices.Contains(modules, m) {
			t.Errorf("no module %s found (modules: %v): the check would miss it", m, modules)
		}
	}
	// Every module is known only once the walk is over.
	for _, im := range imports {
		if moduleOf(im[1]+"/", modules) != moduleOf(im[0], modules) {
			t.Errorf("%s imports %s/%s: a module may import only the public packages of another module", im[0], root, im[1])
		}
	}
}

// moduleOf is the module of modules whose directory holds path (the
// longest such directory), or "" for the core.
func moduleOf(path string, modules []string) string {
	path = filepath.ToSlash(path)
	owner := ""
	for _, m := range modules {
		if strings.HasPrefix(path, m+"/") && len(m) > len(owner) {
			owner = m
		}
	}
	return owner
}
