// Command replay is a dry run of preflight over an agent run that already
// happened: it reads the run's tool calls, in order, and reports what an
// agent.Guard would have executed, reused, blocked or deferred, and the
// dollars involved. Operators use it to decide whether to switch preflight on.
//
//	go run ./examples/replay -f examples/replay/testdata/run.jsonl [-budget 0.05] [-ttl 600]
//	    [-retry-cap 1] [-reuse=true] [-reduce-scope=false] [-advise run|skip]
//	    [-unsupported similar|run|skip] [-operations catalog.json] [-v]
//
// -operations names a catalog file (the format preflightd --operations
// reads, see preflight.DecodeCatalog): the run's own tools are then
// decided with their schemas and effects instead of as unsupported.
//
// # Input: JSON Lines
//
// One JSON object per line, one line per proposed tool call, in the order the
// agent proposed them. Blank lines are skipped; anything else that is not a
// valid record stops the replay with an error naming the line.
//
//	{"t":0,"stepId":"s1","provider":"search","operation":"web_search",
//	 "request":{"query":"go iterators"},"costUsd":0.005,
//	 "outcome":"success","resultReference":"s3://runs/1/s1.json","goalHash":"g1"}
//
//	t               required  seconds since the run started, non-decreasing; ages are computed from it
//	stepId          required  the step's id
//	provider        required  as in a tool-call request ("search", "browse", anything else)
//	operation       required  as in a tool-call request
//	request         required  the tool's payload, a JSON object, exactly as sent
//	costUsd         required  what the call cost in the recorded run; also the estimate preflight sees
//	outcome         required  success, terminal_failure or transient_failure, as it happened
//	modelCostUsd    optional  model cost of the call (estimate and cost); default 0
//	resultReference optional  where the result was saved; needed for reuse
//	goalHash        optional  the goal the call served; needed for reuse
//	runId           optional  default "replay"
//	toolCallId      optional  default stepId
//
// # How it replays
//
// Each line goes through an agent.Guard whose ledger clock reads the line's
// t. When the Guard runs the call, the recorded outcome, reference and cost
// are what the "call" returns and what the ledger records; when it does not
// (reuse, block, defer, or skipped advice), nothing is recorded, exactly as
// in a live run. Later lines are replayed as recorded even though a live
// agent might have acted differently after a skipped call: the report is an
// estimate of exposure, not a promise. Without -budget the budget is
// unlimited (1,000,000,000) and nothing is deferred for money.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
)

func main() {
	os.Exit(cmd(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// The usage line and what -h prints under it.
const (
	usage   = "usage: replay -f RUN.jsonl [flags]"
	summary = "Replays a recorded agent run (JSON Lines, one tool call a line; -f - reads standard input)\n" +
		"through an agent.Guard and reports what preflight would have run, reused, blocked or deferred."
)

// cmd runs replay with args and returns its exit status: 0 on success and
// for -h or --help (the usage goes to stdout), 2 for a mistake on the
// command line (the error and the usage line go to stderr), 1 for any other
// failure.
func cmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	err := run(context.Background(), args, stdin, stdout)
	var ue usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "replay: %v\n%s\nRun 'replay -h' for the flags.\n", err, usage)
		return 2
	default:
		fmt.Fprintf(stderr, "replay: %v\n", err)
		return 1
	}
}

// usageError is a mistake on the command line.
type usageError struct{ error }

// usagef returns a usageError with a formatted message.
func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// parseFlags parses args into fs. On -h or --help it prints the usage to
// stdout and returns flag.ErrHelp; a bad flag or a stray argument is a
// usageError. fs itself prints nothing.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintf(stdout, "%s\n\n%s\n\nflags:\n", usage, summary)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return err
	case err != nil:
		return usageError{err}
	case fs.NArg() > 0:
		return usagef("unexpected arguments %q", fs.Args())
	}
	return nil
}

// settings are the flags of a replay.
type settings struct {
	file        string
	budget      string
	ttl         string
	retryCap    int
	reuse       bool
	reduceScope bool
	advise      string
	unsupported string
	operations  string
	verbose     bool
}

func run(ctx context.Context, args []string, stdin io.Reader, out io.Writer) error {
	var s settings
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.StringVar(&s.file, "f", "", "recorded run, JSON Lines (- for standard input)")
	fs.StringVar(&s.budget, "budget", "", "the run's budget in USD; empty means unlimited")
	fs.StringVar(&s.ttl, "ttl", "600", "freshnessTtlSeconds: how old a saved result may be and still be reused; 0 disables reuse")
	fs.IntVar(&s.retryCap, "retry-cap", 1, "terminal failures of the same call that end retrying")
	fs.BoolVar(&s.reuse, "reuse", true, "the agent can reuse saved results (canReusePriorResult)")
	fs.BoolVar(&s.reduceScope, "reduce-scope", false, "the agent can narrow a call (canReduceScope)")
	fs.StringVar(&s.advise, "advise", "run", "what to do with advice: run or skip")
	fs.StringVar(&s.unsupported, "unsupported", "similar",
		"what to do with operations the catalog lacks: similar (run unless one edit from a known one), run or skip")
	fs.StringVar(&s.operations, "operations", "", "catalog file of the operations to decide; empty means the built-in ones")
	fs.BoolVar(&s.verbose, "v", false, "print the decision for every line")
	if err := parseFlags(fs, args, out); err != nil {
		return err
	}
	if s.file == "" {
		return usagef("-f is required: the recorded run, JSON Lines")
	}
	if s.retryCap < 1 {
		return usagef("-retry-cap is %d; want 1 or more", s.retryCap)
	}
	if _, err := parseDecimal(json.Number(s.ttl)); err != nil {
		return fmt.Errorf("-ttl: %v", err)
	}
	opts := &agent.GuardOptions{BudgetUSD: json.Number(s.budget)}
	switch s.advise {
	case "run":
		opts.Advise = agent.RunAdvised
	case "skip":
		opts.Advise = agent.SkipAdvised
	default:
		return usagef("-advise is %q; want run or skip", s.advise)
	}
	switch s.unsupported {
	case "similar":
		opts.Unsupported = agent.RunUnsupportedUnlessSimilar
	case "run":
		opts.Unsupported = agent.RunUnsupported
	case "skip":
		opts.Unsupported = agent.SkipUnsupported
	default:
		return usagef("-unsupported is %q; want similar, run or skip", s.unsupported)
	}
	if s.operations != "" {
		data, err := os.ReadFile(s.operations)
		if err != nil {
			return fmt.Errorf("-operations: %v", err)
		}
		if opts.Catalog, err = preflight.DecodeCatalog(data); err != nil {
			return fmt.Errorf("-operations %s: %v", s.operations, err)
		}
	}

	in, name := stdin, "stdin"
	if s.file != "-" {
		f, err := os.Open(s.file)
		if err != nil {
			return err
		}
		defer f.Close()
		in, name = f, filepath.Base(s.file)
	}

	var now time.Time // the replay clock: run start + the line's t
	ledger := agent.NewLedger(&agent.LedgerOptions{Now: func() time.Time { return now }})
	guard, err := agent.NewGuard(ledger, opts)
	if err != nil {
		return fmt.Errorf("-budget: %v", err)
	}
	start := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

	rep := newReport()
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	lastT := new(big.Rat)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		fail := func(err error) error { return fmt.Errorf("%s:%d: %v", name, n, err) }
		l, err := decodeLine(sc.Bytes())
		if err != nil {
			return fail(err)
		}
		t, _ := parseDecimal(json.Number(l.T))
		if t.Cmp(lastT) < 0 {
			return fail(fmt.Errorf(`"t" is %s, earlier than the line before (%s); lines must be in run order`, l.T, decimalText(lastT)))
		}
		lastT = t
		ms, _ := new(big.Rat).Mul(t, thousand).Float64()
		now = start.Add(time.Duration(ms) * time.Millisecond)

		cost := sum(json.Number(l.CostUSD), json.Number(l.ModelCostUSD))
		r, err := guard.Call(ctx, s.request(l), func(context.Context) (agent.Completion, error) {
			return agent.Completion{
				Outcome:         l.Outcome,
				ResultReference: l.ResultReference,
				ToolCallID:      l.ToolCallID,
				CostUSD:         json.Number(decimalText(cost)),
			}, nil
		})
		if err != nil {
			return fail(err)
		}
		rep.add(r, cost)
		if s.verbose {
			fmt.Fprintf(out, "%-14s %-8s %-6s executed=%-5v $%-8s %s\n", fmt.Sprintf("%s:%d", name, n), l.StepID, r.Decision.Verdict, r.Called,
				decimalText(cost), joinCodes(r.Decision.ReasonCodes)+overBudget(r))
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %v", name, err)
	}
	if s.verbose {
		fmt.Fprintln(out)
	}
	rep.print(out, name, s)
	return nil
}

// request builds the tool-call request for a line under the settings.
func (s settings) request(l *line) preflight.ToolCallRequest {
	runID := l.RunID
	if runID == "" {
		runID = "replay"
	}
	req := preflight.ToolCallRequest{
		RunID:  runID,
		StepID: l.StepID,
		Tool: preflight.ToolCall{
			Provider:                 l.Provider,
			Operation:                l.Operation,
			Request:                  l.Request,
			EstimatedExternalCostUSD: json.Number(l.CostUSD),
			EstimatedModelCostUSD:    json.Number(l.ModelCostUSD),
		},
		Budget:              preflight.Budget{RemainingUSD: "1000000000"},
		Capabilities:        &preflight.Capabilities{CanReusePriorResult: s.reuse, CanReduceScope: s.reduceScope},
		FreshnessTTLSeconds: json.Number(s.ttl),
		RetryCap:            json.Number(strconv.Itoa(s.retryCap)),
	}
	if l.GoalHash != "" {
		req.Task = &preflight.Task{GoalHash: l.GoalHash}
	}
	return req
}

// thousand converts seconds to milliseconds.
var thousand = big.NewRat(1000, 1)

func sum(ns ...json.Number) *big.Rat {
	total := new(big.Rat)
	for _, n := range ns {
		if n != "" {
			r, _ := parseDecimal(n) // validated by decodeLine
			total = add(total, r)
		}
	}
	return total
}

func overBudget(r agent.Report) string {
	switch {
	case r.OverCallLimit:
		return " (advised, past the call limit: not run)"
	case r.OverBudget:
		return " (advised, over the free budget: not run)"
	}
	return ""
}

func joinCodes(codes []preflight.ReasonCode) string {
	s := make([]string, len(codes))
	for i, c := range codes {
		s[i] = string(c)
	}
	return strings.Join(s, ",")
}

// report tallies a replay by decision kind.
type report struct {
	rows    map[preflight.Verdict]*row
	reasons map[preflight.ReasonCode]int
}

type row struct {
	calls, executed, skipped int
	executedUSD, skippedUSD  *big.Rat // nil is 0
}

func newReport() *report {
	return &report{rows: map[preflight.Verdict]*row{}, reasons: map[preflight.ReasonCode]int{}}
}

func (r *report) add(rep agent.Report, cost *big.Rat) {
	d := rep.Decision
	w := r.rows[d.Verdict]
	if w == nil {
		w = &row{}
		r.rows[d.Verdict] = w
	}
	w.calls++
	if rep.Called {
		w.executed++
		w.executedUSD = add(w.executedUSD, cost)
	} else {
		w.skipped++
		w.skippedUSD = add(w.skippedUSD, cost)
	}
	for _, c := range d.ReasonCodes {
		r.reasons[c]++
	}
}

func (r *report) print(out io.Writer, name string, s settings) {
	var total row
	for _, w := range r.rows {
		total.calls += w.calls
		total.executed += w.executed
		total.skipped += w.skipped
		total.executedUSD = add(total.executedUSD, w.executedUSD)
		total.skippedUSD = add(total.skippedUSD, w.skippedUSD)
	}
	recorded := add(total.executedUSD, total.skippedUSD)
	budget := "unlimited"
	if s.budget != "" {
		budget = "$" + s.budget
	}
	fmt.Fprintf(out, "Replay of %s: %d recorded tool calls, $%s recorded spend\n", name, total.calls, decimalText(recorded))
	fmt.Fprintf(out, "settings: ttl %ss, retry cap %d, reuse %v, reduce scope %v, advice %s, budget %s\n\n",
		s.ttl, s.retryCap, s.reuse, s.reduceScope, s.advise, budget)
	line := func(name string, w row) {
		fmt.Fprintf(out, "%-8s %6d %9d %8d %13s %12s\n", name, w.calls, w.executed, w.skipped,
			decimalText(w.executedUSD), decimalText(w.skippedUSD))
	}
	fmt.Fprintf(out, "%-8s %6s %9s %8s %13s %12s\n", "decision", "calls", "executed", "skipped", "executed USD", "skipped USD")
	for _, v := range []preflight.Verdict{preflight.VerdictAllow, preflight.VerdictReuse, preflight.VerdictBlock, preflight.VerdictDefer, preflight.VerdictAdvise} {
		if w := r.rows[v]; w != nil {
			line(string(v), *w)
		}
	}
	line("total", total)

	fmt.Fprintf(out, "\nWith preflight in the loop this run would have spent $%s of the recorded $%s.\n",
		decimalText(total.executedUSD), decimalText(recorded))
	fmt.Fprintln(out, "Skipped reuse calls are answered from saved results; skipped block calls would have failed")
	fmt.Fprintln(out, "again or were malformed; skipped defer calls did not fit the budget and may still be needed.")
	fmt.Fprintln(out, "Skipped advise calls were refused by -advise skip or did not fit the free budget.")
	fmt.Fprintln(out, "Later lines are replayed as recorded; a live agent may have acted differently.")

	codes := make([]string, 0, len(r.reasons))
	for c := range r.reasons {
		codes = append(codes, string(c))
	}
	sort.Strings(codes)
	fmt.Fprintln(out, "\nreason codes:")
	for _, c := range codes {
		fmt.Fprintf(out, "  %-26s %d\n", c, r.reasons[preflight.ReasonCode(c)])
	}
}
