//go:build unix

package preflight

// TestReadmeCommands keeps every command README.md shows runnable: it finds
// each command (shell code blocks and inline code that starts like one),
// requires each to be known to this test, and runs the known ones as
// written: the quick start's server, curl and Go program (comparing the
// answers with the ones the README prints), the examples, the paid
// server, the guarding proxy and the server with metrics and tracing
// (readme_ops_test.go). The few it does not run itself are run by .ci/run (checked
// here) or by TestBinaryEndToEnd (the curl examples block).

import (
	"bufio"
	"bytes"
	"encoding/json"
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

	"github.com/agentpreflight/preflight/internal/testpart"
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

// Commands the README shows that this test does not run itself, and who does.
const (
	byCI       = ".ci/run"
	byEndToEnd = "TestBinaryEndToEnd"
)

const (
	readmeServer   = "go run ./server/cmd/preflightd"
	readmeHelp     = "go run ./server/cmd/preflightd -h"
	readmeTests    = "go test ./..."
	readmeGoGet    = "go get github.com/agentpreflight/preflight"
	readmeGoRun    = "go run ."
	readmeNPM      = "(cd interop/mcp && npm ci) && (cd interop/x402 && npm ci)"
	readmePaid     = "go run ./server/cmd/preflightd --base-url https://api.example.com \\\n  --pay-to \"$PAY_TO\" --network eip155:84532 --facilitator-url https://facilitator.example.com"
	readmeLoopBase = "http://127.0.0.1:8080"
)

// readmeExamples are the example programs the README shows; each runs and
// must exit 0 (their output is pinned by their own golden tests).
var readmeExamples = []string{
	"go run ./examples/agentloop",
	"go run ./examples/replay -f examples/replay/testdata/run.jsonl",
	"go run ./examples/mcpclient -url http://127.0.0.1:8080/mcp",
	"go run ./examples/httpclient --base-url http://127.0.0.1:8080",
}

func TestReadmeCommands(t *testing.T) {
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	blocks := readmeBlocks(readme)

	// Every command shown must be one this test knows how to run.
	known := map[string]string{readmeServer: "run", readmeHelp: "run", readmeTests: byCI, readmeGoGet: "run",
		readmeGoRun: "run", readmeNPM: byCI, readmePaid: "run", readmeProxyHTTP: "run",
		readmeProxyStdio: "run", readmeTraced: "run", readmeOverhead: byCI}
	for _, ex := range readmeExamples {
		known[ex] = "run"
	}
	shown := map[string]bool{}
	var quickCurl string
	for _, b := range blocks {
		if b.lang != "sh" {
			continue
		}
		if strings.HasPrefix(b.text, "BASE="+readmeLoopBase+"\n") {
			checkCurlExamplesBlock(t, b.text, blockAfterText(blocks, b.text))
			continue
		}
		for _, c := range shellCommands(b.text) {
			if strings.HasPrefix(c, "curl ") && b.section == "Quick start" {
				quickCurl = c
				known[c] = "run"
			}
			shown[c] = true
		}
	}
	for _, m := range inlineCommand.FindAllStringSubmatch(readme, -1) {
		shown[m[1]] = true
	}
	for c := range shown {
		if known[c] == "" {
			t.Errorf("README.md shows the command %q, which no test runs; run it in TestReadmeCommands (readme_test.go) or .ci/run", c)
		}
	}
	for c := range known {
		if !shown[c] {
			t.Errorf("TestReadmeCommands knows %q, which README.md no longer shows; drop it from the test", c)
		}
	}
	ci, err := os.ReadFile(filepath.Join(".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	for c, by := range known {
		if by == byCI && !regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(c)+`$`).Match(ci) {
			t.Errorf(".ci/run does not run the README command %q on a line of its own", c)
		}
	}
	if quickCurl == "" {
		t.Fatal("the quick start shows no curl command")
	}

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
	base := startReadmeServer(t, bash, readmeServer, nil)
	t.Run("quick start curl", func(t *testing.T) {
		want := blockAfter(t, blocks, "Quick start", "json", 0)
		got := runReadmeCommand(t, bash, strings.ReplaceAll(quickCurl, readmeLoopBase, base), nil)
		got += "\n" // the body ends without one; the terminal shows the prompt after it
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("the quick start's curl prints something else than README.md says (-readme +got):\n%s", diff)
		}
	})
	t.Run("quick start Go program", func(t *testing.T) {
		testReadmeGoProgram(t, bash, blocks)
	})
	t.Run("help", func(t *testing.T) {
		out := runReadmeCommand(t, bash, readmeHelp, nil)
		if !strings.HasPrefix(out, "usage: preflightd [flags]\n") || !strings.Contains(out, "-pay-to") {
			t.Errorf("%s printed:\n%s", readmeHelp, out)
		}
	})
	t.Run("examples", func(t *testing.T) {
		for _, ex := range readmeExamples {
			out := runReadmeCommand(t, bash, strings.ReplaceAll(ex, readmeLoopBase, base), nil)
			if strings.TrimSpace(out) == "" {
				t.Errorf("%s printed nothing", ex)
			}
		}
	})
	t.Run("paid server", func(t *testing.T) {
		paid := startReadmeServer(t, bash, readmePaid, []string{"PAY_TO=0x1111111111111111111111111111111111111111"})
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
	t.Run("proxy in front of an HTTP MCP server", func(t *testing.T) { testReadmeProxyHTTP(t, bash) })
	t.Run("proxy in front of a stdio MCP server", func(t *testing.T) { testReadmeProxyStdio(t, bash, blocks) })
	t.Run("metrics and tracing", func(t *testing.T) { testReadmeTraced(t, bash) })
}

// blockAfterText returns the text of the block that follows the one whose
// text is text, or "".
func blockAfterText(blocks []readmeBlock, text string) string {
	for i, b := range blocks[:len(blocks)-1] {
		if b.text == text {
			return blocks[i+1].text
		}
	}
	return ""
}

// checkCurlExamplesBlock requires the README's block of curl examples to be
// server/testdata/curl-examples.sh without its header comment, and the block
// after it to be their output, curl-examples.golden: TestBinaryEndToEnd
// runs the one against the real binary and compares with the other.
func checkCurlExamplesBlock(t *testing.T, block, output string) {
	t.Helper()
	script, err := os.ReadFile(filepath.Join("server", "testdata", "curl-examples.sh"))
	if err != nil {
		t.Fatal(err)
	}
	_, examples, _ := strings.Cut(string(script), "\n\n")
	want := "BASE=" + readmeLoopBase + "\n\n" + examples
	if diff := cmp.Diff(want, block); diff != "" {
		t.Errorf("README.md's curl examples differ from server/testdata/curl-examples.sh, which %s runs (-script +readme):\n%s", byEndToEnd, diff)
	}
	golden, err := os.ReadFile(filepath.Join("server", "testdata", "curl-examples.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(strings.TrimRight(string(golden), "\n")+"\n", output); diff != "" {
		t.Errorf("README.md's curl output differs from server/testdata/curl-examples.golden, which %s compares (-golden +readme):\n%s", byEndToEnd, diff)
	}
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

// runReadmeCommand runs command with bash in the repository root and returns
// its standard output; it must exit 0.
func runReadmeCommand(t *testing.T, bash, command string, extra []string) string {
	t.Helper()
	return runIn(t, ".", bash, command, extra)
}

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
func startReadmeServer(t *testing.T, bash, command string, extra []string) string {
	t.Helper()
	return "http://" + startReadmeProcess(t, bash, command, append(extra, "PREFLIGHT_ADDR=127.0.0.1:0"))["listening"]
}

// startReadmeProcess runs command in the repository root, reads its JSON
// log lines up to the one whose msg is "listening" and returns the addr of
// each line that has one, by msg. The process group is stopped when the
// test ends.
func startReadmeProcess(t *testing.T, bash, command string, extra []string) map[string]string {
	t.Helper()
	cmd := exec.Command(bash, "-e", "-c", command) // the process group is stopped, so no exec is needed
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
// README's go get there (pointed at this checkout with a replace
// directive, since the test must not depend on a published version), saves
// the README's program as main.go and requires go run . to print what the
// README says.
func testReadmeGoProgram(t *testing.T, bash string, blocks []readmeBlock) {
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// The checkout's go.sum already holds every hash go get needs, so no
	// checksum database is asked.
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	program := blockAfter(t, blocks, "Quick start", "go", 0)
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	// GOPROXY=off: the module comes from this checkout through the replace
	// directive, and its dependencies from the module cache.
	env := []string{"GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off"}
	runIn(t, dir, bash, "go mod init example.com/quickstart", env)
	runIn(t, dir, bash, "go mod edit -replace github.com/agentpreflight/preflight="+root, env)
	runIn(t, dir, bash, readmeGoGet, env)
	got := runIn(t, dir, bash, readmeGoRun, env)
	want := blockAfter(t, blocks, "Quick start", "text", 0)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the quick start's Go program prints something else than README.md says (-readme +got):\n%s", diff)
	}
}
