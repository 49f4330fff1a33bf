//go:build unix

package main

// TestReadmeCommands keeps every command README.md and CONTRIBUTING.md
// show runnable: it finds each command (shell code blocks and inline code
// that starts like one), requires each to be known to this test, and runs
// the known ones as written from the repository root: the quick start's
// server, curl and help, the README's Go blocks as a program after the
// README's go get, the examples and the guarding proxy. The few it does not
// run itself are run by .ci/run (checked here). It also runs the commands
// that preflightd's package doc (doc.go) and the guide's proxy section
// show (readme_ops_test.go).

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentpreflight/preflight/server/internal/release"
	"github.com/agentpreflight/preflight/server/internal/testpart"
)

// readmeBlock is one fenced code block of the README.
type readmeBlock struct {
	lang, text string
	section    string // the ## heading it sits under
}

// readmeBlocks returns the fenced code blocks of md in order. A block in a
// list item loses its fence's indentation.
func readmeBlocks(md string) []readmeBlock {
	var blocks []readmeBlock
	var cur *readmeBlock
	indent, section := "", ""
	for _, line := range strings.Split(md, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && strings.HasPrefix(line, "## "):
			section = strings.TrimPrefix(line, "## ")
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			cur = &readmeBlock{lang: strings.TrimPrefix(trimmed, "```"), section: section}
			indent = line[:len(line)-len(strings.TrimLeft(line, " "))]
		case cur != nil && trimmed == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.text += strings.TrimPrefix(line, indent) + "\n"
		}
	}
	return blocks
}

// shellCommands splits a shell block into commands: a command goes on past
// a line ending in a backslash or inside an open single-quoted string;
// comment lines and trailing "  # ..." comments are dropped.
func shellCommands(text string) []string {
	var cmds []string
	var cur strings.Builder
	for _, line := range strings.Split(text, "\n") {
		if cur.Len() == 0 && (strings.HasPrefix(strings.TrimSpace(line), "#") || strings.TrimSpace(line) == "") {
			continue
		}
		if i := strings.Index(line, "  # "); i >= 0 && strings.Count(line[:i], "'")%2 == 0 {
			line = line[:i]
		}
		cur.WriteString(strings.TrimRight(line, " "))
		if c := cur.String(); strings.HasSuffix(c, "\\") || strings.Count(c, "'")%2 == 1 {
			cur.WriteString("\n")
			continue
		}
		cmds = append(cmds, cur.String())
		cur.Reset()
	}
	return cmds
}

// inlineCommand matches inline code that reads like a command to run.
var inlineCommand = regexp.MustCompile("`((?:go (?:run|test|get|build|install)|curl|npm|git|apt-get|\\(cd) [^`]*)`")

// byCI marks a command the documents show that this test does not run
// itself: .ci/run runs it, on a line of its own.
const byCI = ".ci/run"

const (
	readmeServer   = "go run ./server/cmd/preflightd"
	readmeHelp     = "go run ./server/cmd/preflightd -h"
	readmeTests    = "go test -timeout 30m $(go list -m -f '{{.Dir}}/...')"
	readmeGoGet    = "go get github.com/agentpreflight/preflight"
	readmeNPM      = "(cd server/interop/mcp && npm ci) && (cd server/interop/x402 && npm ci)"
	readmeLint     = "go install honnef.co/go/tools/cmd/staticcheck@v0.8.2"
	readmeLoopBase = "http://127.0.0.1:8080"
	readmeVerify   = "go run ./cmd/preflight verify --prev 5b102ba0fcbaaf241668a509d4c7a46a97605960b3641e805f93f7b6e0477b7e --keys receipt/testdata/vector/keys.json \\\n" +
		"  --request receipt/testdata/vector/request.json --response receipt/testdata/vector/response.json --receipt receipt/testdata/vector/receipt.txt"
)

// readmeExamples are the example programs the README shows; each runs and
// must exit 0 (their output is pinned by their own golden tests).
// server/examples/mcpclient imports the MCP go-sdk; it is run where the README
// says it is.
var readmeExamples = []string{
	"go run ./examples/agentloop",
	"go run ./examples/replay -f examples/replay/testdata/run.jsonl",
	"go run ./server/examples/mcpclient -url http://127.0.0.1:8080/mcp",
	"go run ./server/examples/httpclient --base-url http://127.0.0.1:8080",
}

// repoRoot returns the repository root: the nearest directory above this
// package's that holds README.md and CONTRIBUTING.md.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		_, errReadme := os.Stat(filepath.Join(dir, "README.md"))
		_, errContrib := os.Stat(filepath.Join(dir, "CONTRIBUTING.md"))
		if errReadme == nil && errContrib == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no directory above this package holds README.md and CONTRIBUTING.md")
		}
		dir = parent
	}
}

// readRoot returns the text of the file at path, relative to the
// repository root.
func readRoot(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestReadmeCommands(t *testing.T) {
	root := repoRoot(t)
	readme := readRoot(t, "README.md")
	blocks := readmeBlocks(readme)

	// Every command shown must be one this test knows how to run.
	known := map[string]string{readmeServer: "run", readmeHelp: "run", readmeTests: byCI, readmeGoGet: "run",
		readmeNPM: byCI, readmeLint: byCI, readmeProxyHTTP: "run", readmeOverhead: byCI, readmeVerify: "run"}
	for _, ex := range readmeExamples {
		known[ex] = "run"
	}
	shown := map[string]bool{}
	var quickCurl string
	for _, doc := range []string{"README.md", "CONTRIBUTING.md"} {
		text := readRoot(t, doc)
		for _, b := range readmeBlocks(text) {
			if b.lang != "sh" {
				continue
			}
			for _, c := range shellCommands(b.text) {
				if doc == "README.md" && strings.HasPrefix(c, "curl ") && b.section == "Quick start" {
					quickCurl = c
					known[c] = "run"
				}
				shown[c] = true
			}
		}
		for _, m := range inlineCommand.FindAllStringSubmatch(text, -1) {
			shown[m[1]] = true
		}
	}
	for c := range shown {
		if known[c] == "" {
			t.Errorf("README.md or CONTRIBUTING.md shows the command %q, which no test runs; run it in TestReadmeCommands (server/cmd/preflightd/readme_test.go) or .ci/run", c)
		}
	}
	for c := range known {
		if !shown[c] {
			t.Errorf("TestReadmeCommands knows %q, which neither README.md nor CONTRIBUTING.md shows; drop it from the test", c)
		}
	}
	ci := readRoot(t, ".ci/run")
	for c, by := range known {
		if by == byCI && !regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(c)+`$`).MatchString(ci) {
			t.Errorf(".ci/run does not run the command %q on a line of its own", c)
		}
	}
	if quickCurl == "" {
		t.Fatal("the README's quick start shows no curl command")
	}
	paid, traced := docCommand(t, readmePaid), docCommand(t, readmeTraced)
	stdio, tools := guideProxyStdio(t)

	if testing.Short() {
		t.Skip("the commands themselves build and run programs")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		testpart.Missing(t, "bash is not installed; apt-get install bash")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		testpart.Missing(t, "curl is not installed; apt-get install curl")
	}
	if _, err := exec.LookPath("go"); err != nil {
		testpart.Missing(t, "the go command is not on PATH")
	}

	// The quick start: the server, then the curl against it.
	base := startReadmeServer(t, bash, root, readmeServer, nil)
	t.Run("quick start curl", func(t *testing.T) {
		want := blockAfter(t, blocks, "Quick start", "json", 0)
		got := runIn(t, root, bash, strings.ReplaceAll(quickCurl, readmeLoopBase, base), nil)
		got += "\n" // the body ends without one; the terminal shows the prompt after it
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("the quick start's curl prints something else than README.md says (-readme +got):\n%s", diff)
		}
	})
	t.Run("Go blocks after go get", func(t *testing.T) {
		testReadmeGoProgram(t, bash, root, blocks)
	})
	t.Run("help", func(t *testing.T) {
		out := runIn(t, root, bash, readmeHelp, nil)
		if !strings.HasPrefix(out, "usage: preflightd [flags]\n") || !strings.Contains(out, "-pay-to") || !strings.Contains(out, "preflightd proxy") {
			t.Errorf("%s printed:\n%s", readmeHelp, out)
		}
	})
	t.Run("examples", func(t *testing.T) {
		for _, ex := range readmeExamples {
			out := runIn(t, root, bash, strings.ReplaceAll(ex, readmeLoopBase, base), nil)
			if strings.TrimSpace(out) == "" {
				t.Errorf("%s printed nothing", ex)
			}
		}
	})
	t.Run("receipt verify", func(t *testing.T) {
		out := runIn(t, root, bash, readmeVerify, nil)
		if !strings.HasPrefix(out, "verified: the decision was signed by key ") {
			t.Errorf("%s printed:\n%s", readmeVerify, out)
		}
	})
	t.Run("paid server", func(t *testing.T) {
		paid := startReadmeServer(t, bash, root, paid, []string{"PAY_TO=0x1111111111111111111111111111111111111111"})
		resp, err := http.Post(paid+"/v0.2/preflight/tool-call", "application/json", strings.NewReader(
			`{"runId":"r","stepId":"s","tool":{"provider":"search","operation":"web_search","request":{"query":"q"},"estimatedExternalCostUsd":0},"budget":{"remainingUsd":1}}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusPaymentRequired {
			t.Errorf("the paid server's tool-call route answered %d without payment, want 402", resp.StatusCode)
		}
	})
	t.Run("proxy in front of an HTTP MCP server", func(t *testing.T) { testReadmeProxyHTTP(t, bash, root) })
	t.Run("proxy in front of a stdio MCP server", func(t *testing.T) { testReadmeProxyStdio(t, bash, root, stdio, tools) })
	t.Run("metrics and tracing", func(t *testing.T) { testReadmeTraced(t, bash, root, traced) })
}

// blockAfter returns the text of the n-th block in lang of section.
func blockAfter(t *testing.T, blocks []readmeBlock, section, lang string, n int) string {
	t.Helper()
	for _, b := range blocks {
		if b.section == section && b.lang == lang {
			if n == 0 {
				return b.text
			}
			n--
		}
	}
	t.Fatalf("README.md has no %s block number %d in %q", lang, n, section)
	return ""
}

// readmeEnv is the environment of a README command: the test's, without
// PREFLIGHT_* settings, plus extra.
func readmeEnv(extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PREFLIGHT_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// runIn runs command with bash in dir and returns its standard output;
// it must exit 0.
func runIn(t *testing.T, dir, bash, command string, extra []string) string {
	t.Helper()
	cmd := exec.Command(bash, "-e", "-c", command)
	cmd.Dir = dir
	cmd.Env = readmeEnv(extra)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", command, err, stderr.String())
	}
	return stdout.String()
}

// startReadmeServer runs command (a go run of preflightd) as written, with
// PREFLIGHT_ADDR=127.0.0.1:0 so it takes a free port instead of 8080, waits
// for its "listening" log line and returns its base URL. The process group
// is stopped when the test ends.
func startReadmeServer(t *testing.T, bash, dir, command string, extra []string) string {
	t.Helper()
	return "http://" + startReadmeProcess(t, bash, dir, command, append(extra, "PREFLIGHT_ADDR=127.0.0.1:0"))["listening"]
}

// startReadmeProcess runs command in dir, reads its JSON
// log lines up to the one whose msg is "listening" and returns the addr of
// each line that has one, by msg. The process group is stopped when the
// test ends.
func startReadmeProcess(t *testing.T, bash, dir, command string, extra []string) map[string]string {
	t.Helper()
	cmd := exec.Command(bash, "-e", "-c", command) // the process group is stopped, so no exec is needed
	cmd.Dir = dir
	cmd.Env = readmeEnv(extra)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // go run starts the program as its child
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		cmd.Wait()
	})
	addrs := map[string]string{}
	listening := make(chan bool, 1)
	var log bytes.Buffer
	go func() {
		sc := bufio.NewScanner(stderr)
		ok := false
		for sc.Scan() {
			log.Write(sc.Bytes())
			log.WriteByte('\n')
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Addr != "" {
				addrs[line.Msg] = line.Addr
				if ok = line.Msg == "listening"; ok {
					break
				}
			}
		}
		listening <- ok
		io.Copy(io.Discard, stderr)
	}()
	select {
	case ok := <-listening:
		if !ok {
			t.Fatalf("%s ended without listening:\n%s", command, log.String())
		}
		return addrs
	case <-time.After(3 * time.Minute): // a guard against a hang (go run compiles first), not a timing assertion
		t.Fatalf("%s did not start listening", command)
		return nil
	}
}

// testReadmeGoProgram makes a new module in an empty directory, runs the
// README's go get there (against a file-based proxy of this checkout's
// modules, since the test must not depend on a published version), puts
// each of the README's Go blocks in a function of its own in main.go, and
// requires go run . to print what their Output comments say.
func testReadmeGoProgram(t *testing.T, bash, root string, blocks []readmeBlock) {
	var funcs, calls, want strings.Builder
	n := 0
	for _, b := range blocks {
		if b.lang != "go" {
			continue
		}
		n++
		fmt.Fprintf(&funcs, "\nfunc example%d() {\n%s}\n", n, b.text)
		fmt.Fprintf(&calls, "\texample%d()\n", n)
		_, output, ok := strings.Cut(b.text, "// Output:\n")
		if !ok {
			t.Fatalf("README.md's Go block in %q has no // Output: comment", b.section)
		}
		for _, line := range strings.SplitAfter(output, "\n") {
			want.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "//"), " "))
		}
	}
	if n == 0 {
		t.Fatal("README.md shows no Go block")
	}
	var imports strings.Builder
	for _, pkg := range []string{"context", "encoding/json", "errors", "fmt", "github.com/agentpreflight/preflight"} {
		if strings.Contains(funcs.String(), pkg[strings.LastIndex(pkg, "/")+1:]+".") {
			fmt.Fprintf(&imports, "\t%q\n", pkg)
		}
	}
	program := "package main\n\nimport (\n" + imports.String() + ")\n" + funcs.String() + "\nfunc main() {\n" + calls.String() + "}\n"

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	// The module comes from a file-based proxy holding this checkout's
	// modules at the version the next release tags, as go get would find
	// it published; go-cmp (the core's one requirement, for its tests)
	// from the module cache. No replace, no workspace, no checksum
	// database.
	proxy := filepath.Join(t.TempDir(), "proxy")
	mods, err := release.Modules(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := release.WriteProxy(proxy, root, mods, "v0.1.0"); err != nil {
		t.Fatal(err)
	}
	cache := strings.TrimSpace(runIn(t, dir, bash, "go env GOMODCACHE", nil))
	modcache := filepath.Join(t.TempDir(), "modcache")
	// The go command writes its module cache read-only.
	t.Cleanup(func() { exec.Command("chmod", "-R", "u+w", modcache).Run() })
	env := []string{"GOWORK=off", "GOFLAGS=-mod=mod", "GOSUMDB=off", "GOTOOLCHAIN=local",
		"GOMODCACHE=" + modcache,
		"GOPROXY=file://" + filepath.ToSlash(proxy) + ",file://" + filepath.ToSlash(filepath.Join(cache, "cache", "download"))}
	runIn(t, dir, bash, "go mod init example.com/readme", env)
	runIn(t, dir, bash, readmeGoGet, env)
	got := runIn(t, dir, bash, "go run .", env)
	if diff := cmp.Diff(want.String(), got); diff != "" {
		t.Errorf("README.md's Go blocks, run as a program, print something else than their Output comments say (-readme +got):\n%s\nprogram:\n%s", diff, program)
	}
}
