package release

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"

	"github.com/agentpreflight/preflight/server/internal/testpart"
)

// version is the version every module requires of the others: the one the
// next release tags (submodules as dir/vX.Y.Z).
const version = "v0.1.0"

const corePath = "github.com/agentpreflight/preflight"

// repoRoot is the repository's root, from this package's directory.
const repoRoot = "../../.."

// TestRequirements: each go.mod requires the other modules of the
// repository at version and has no replace directive, so that what a tag
// publishes builds as it is.
func TestRequirements(t *testing.T) {
	mods, err := Modules(repoRoot)
	if err != nil {
		testpart.Missing(t, "git ls-files failed; run from a git checkout with git on PATH: "+err.Error())
	}
	for _, m := range mods {
		name := path.Join(m.Dir, "go.mod")
		data, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		f, err := modfile.Parse(name, data, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range f.Replace {
			t.Errorf("%s replaces %s: modules require each other by version; go.work joins them for development", name, r.Old.Path)
		}
		for _, r := range f.Require {
			if ours(r.Mod.Path, mods) && r.Mod.Version != version {
				t.Errorf("%s requires %s %s, want %s", name, r.Mod.Path, r.Mod.Version, version)
			}
		}
	}
}

func ours(p string, mods []Module) bool {
	return slices.ContainsFunc(mods, func(m Module) bool { return m.Path == p })
}

// TestPublishable publishes every module of the working tree at version
// into a file-based module proxy and, in fresh modules outside the
// repository, with that proxy, no workspace, no replace directive and no
// checksum database, gets each module and builds a program that uses it.
// Everything else comes from the local module cache (read as a proxy)
// where it can. A consumer that
// imports only the core must see at most three modules, and the core's
// public packages must depend on nothing outside the standard library.
func TestPublishable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every module from a file-based module proxy")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		testpart.Missing(t, "the go command is not on PATH")
	}
	if _, err := exec.LookPath("git"); err != nil {
		testpart.Missing(t, "git is not on PATH; apt-get install git")
	}
	mods, err := Modules(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	proxy := filepath.Join(tmp, "proxy")
	if err := WriteProxy(proxy, repoRoot, mods, version); err != nil {
		t.Fatal(err)
	}
	goenv, err := exec.Command(goTool, "env", "GOMODCACHE", "GOPROXY").Output()
	if err != nil {
		t.Fatal(err)
	}
	cache, upstream, _ := strings.Cut(strings.TrimSpace(string(goenv)), "\n")
	env := append(os.Environ(),
		"GOWORK=off",
		"GOFLAGS=-mod=mod",
		"GOTOOLCHAIN=local",
		"GOSUMDB=off",
		"GONOSUMDB=", "GOPRIVATE=", "GONOPROXY=",
		// A fresh module cache: the shared one must never hold these
		// versions, which change with the working tree.
		"GOMODCACHE="+filepath.Join(tmp, "modcache"),
		// This repository's modules come only from the file proxy; the
		// others from the local module cache, read as a proxy, and only
		// what it lacks (a version the workspace did not select) from the
		// usual proxy.
		"GOPROXY=file://"+filepath.ToSlash(proxy)+",file://"+filepath.ToSlash(filepath.Join(cache, "cache", "download"))+","+upstream,
	)
	t.Cleanup(func() {
		// The go command writes the module cache read-only.
		exec.Command("chmod", "-R", "u+w", filepath.Join(tmp, "modcache")).Run()
	})
	run := func(t *testing.T, dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command(goTool, args...)
		cmd.Dir = dir
		cmd.Env = env
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
		}
		return string(out)
	}
	consumer := func(t *testing.T, name, program string) string {
		dir := filepath.Join(tmp, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		mod := "module example.com/" + name + "\n\ngo 1.25.0\n"
		if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(program), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}

	t.Run("core alone", func(t *testing.T) {
		dir := consumer(t, "corealone", coreProgram)
		run(t, dir, "get", corePath+"@"+version)
		if out := run(t, dir, "run", "."); out != "allow\n" {
			t.Errorf("the program printed %q, want allow", out)
		}
		all := strings.Fields(run(t, dir, "list", "-m", "-f", "{{.Path}}", "all"))
		t.Logf("a program importing only the core sees the modules %v", all)
		if len(all) > 3 {
			t.Errorf("a program importing only the core sees %d modules, want at most 3: %v", len(all), all)
		}
		pkgs := strings.Fields(run(t, dir, "list", corePath+"/..."))
		var public []string
		for _, p := range pkgs {
			parts := strings.Split(p, "/")
			if !slices.Contains(parts, "internal") && !slices.Contains(parts, "examples") {
				public = append(public, p)
			}
		}
		if len(public) < 3 {
			t.Fatalf("the core's public packages are %v: the listing missed some", public)
		}
		deps := run(t, dir, append([]string{"list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}"}, public...)...)
		for _, m := range strings.Fields(deps) {
			if m != corePath {
				t.Errorf("the core's public packages %v depend on module %s; they may use only the standard library", public, m)
			}
		}
	})

	t.Run("every module", func(t *testing.T) {
		dir := consumer(t, "everything", everythingProgram)
		get := []string{"get"}
		for _, m := range mods {
			if m.Path == corePath+"/benchmarks" {
				continue // a development module, never imported
			}
			get = append(get, m.Path+"@"+version)
		}
		run(t, dir, get...) // one resolution of the whole graph, not one per module
		run(t, dir, "vet", ".")
		run(t, dir, "build", "-o", filepath.Join(tmp, "everything.bin"), ".")
	})
}

const coreProgram = `package main

import (
	"fmt"

	"github.com/agentpreflight/preflight"
)

func main() {
	res, err := preflight.DecideJSON([]byte(` + "`" + `{"runId":"run-1","stepId":"step-1","tool":{"provider":"search","operation":"web_search","request":{"query":"go modules"},"estimatedExternalCostUsd":0.005,"estimatedModelCostUsd":0.001},"budget":{"remainingUsd":1}}` + "`" + `))
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Verdict)
}
`

const everythingProgram = `package main

import (
	"fmt"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
	"github.com/agentpreflight/preflight/agent/adkguard"
	"github.com/agentpreflight/preflight/agent/anthropicguard"
	"github.com/agentpreflight/preflight/agent/einoguard"
	"github.com/agentpreflight/preflight/agent/genkitguard"
	"github.com/agentpreflight/preflight/agent/langchaingoguard"
	"github.com/agentpreflight/preflight/agent/mcpgoguard"
	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/agentpreflight/preflight/agent/openaiguard"
	"github.com/agentpreflight/preflight/agent/pgledger"
	"github.com/agentpreflight/preflight/agent/redisledger"
	"github.com/agentpreflight/preflight/server"
)

func main() {
	fmt.Println(preflight.DefaultCatalog() != nil, agent.ClassifyStatus(503))
	fmt.Printf("%T %T %T %T %T %T %T %T %T %T %T\n", adkguard.New, anthropicguard.New, einoguard.New, genkitguard.New, langchaingoguard.New, mcpgoguard.New, mcpguard.ReadCallParams, openaiguard.New, pgledger.New, redisledger.New, server.New)
}
`
