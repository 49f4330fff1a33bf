// Command agentloop plays one research-agent session against a SIMULATED
// search/browse/market-data provider twice, once calling every tool directly and once
// through an agent.Guard, and prints what preflight changed.
//
//	go run ./examples/agentloop [-v]
//
// Everything happens in process: no network, no real provider, a simulated
// clock (15 seconds per step). The numbers are computed from the two runs.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
)

const (
	budgetMicros = 40_000 // the run's budget: $0.04
	stepTime     = 15 * time.Second
)

func main() {
	os.Exit(cmd(os.Args[1:], os.Stdout, os.Stderr))
}

// The usage line and what -h prints under it.
const (
	usage   = "usage: agentloop [-v]"
	summary = "Plays one research-agent session against a simulated provider twice, without and with\n" +
		"preflight's agent.Guard, and prints what preflight changed. No network is used."
)

// cmd runs agentloop with args and returns its exit status: 0 on success
// and for -h or --help (the usage goes to stdout), 2 for a mistake on the
// command line (the error and the usage line go to stderr), 1 for any other
// failure.
func cmd(args []string, stdout, stderr io.Writer) int {
	err := run(context.Background(), args, stdout)
	var ue usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "agentloop: %v\n%s\nRun 'agentloop -h' for the flags.\n", err, usage)
		return 2
	default:
		fmt.Fprintf(stderr, "agentloop: %v\n", err)
		return 1
	}
}

// usageError is a mistake on the command line.
type usageError struct{ error }

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
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	return nil
}

// tally is what one run did.
type tally struct {
	made, reused, blocked, deferred int
	skipped                         int // advised and not run: an unknown tool one edit from a known one
	spentMicros                     int64
	avoidedMicros                   map[preflight.Verdict]int64 // price of calls not made, by decision
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("agentloop", flag.ContinueOnError)
	verbose := fs.Bool("v", false, "print every step of the run with preflight")
	if err := parseFlags(fs, args, out); err != nil {
		return err
	}
	steps := session()
	without := runWithout(steps)
	with, err := runWith(ctx, steps, out, *verbose)
	if err != nil {
		return err
	}
	if *verbose {
		fmt.Fprintln(out)
	}
	printTable(out, len(steps), without, with)
	return nil
}

// runWithout is the agent with no preflight: every proposed call is made.
func runWithout(steps []toolCall) tally {
	p := newSimulatedProvider()
	for _, c := range steps {
		_, _ = p.do(c)
	}
	return tally{made: p.calls, spentMicros: p.spentMicros}
}

// runWith is the same agent with every call going through an agent.Guard.
func runWith(ctx context.Context, steps []toolCall, out io.Writer, verbose bool) (tally, error) {
	now := time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC)
	ledger := agent.NewLedger(&agent.LedgerOptions{Now: func() time.Time { return now }})
	// The catalog: the built-in search and fetch, plus the market-data API.
	catalog, err := preflight.NewCatalog(append(preflight.DefaultCatalog().Operations(), marketData)...)
	if err != nil {
		return tally{}, err
	}
	guard, err := agent.NewGuard(ledger, &agent.GuardOptions{BudgetUSD: usd(budgetMicros), Catalog: catalog})
	if err != nil {
		return tally{}, err
	}
	p := newSimulatedProvider()
	store := map[string]string{} // the agent's saved results
	t := tally{avoidedMicros: map[preflight.Verdict]int64{}}

	for i, c := range steps {
		now = now.Add(stepTime)
		req := preflight.ToolCallRequest{
			RunID:  "research-1",
			StepID: fmt.Sprintf("step-%02d", i+1),
			Tool: preflight.ToolCall{
				Provider:                 c.Provider,
				Operation:                c.Operation,
				Request:                  c.Request,
				EstimatedExternalCostUSD: usd(price(c)),
			},
			Task:                &preflight.Task{GoalHash: "goal:go-iterators"},
			Capabilities:        &preflight.Capabilities{CanReusePriorResult: true},
			FreshnessTTLSeconds: "600",
		}
		rep, err := guard.Call(ctx, req, func(context.Context) (agent.Completion, error) {
			text, err := p.do(c)
			var ce *callError
			switch {
			case errors.As(err, &ce) && ce.transient:
				return agent.Completion{Outcome: preflight.OutcomeTransientFailure}, err
			case err != nil:
				return agent.Completion{Outcome: preflight.OutcomeTerminalFailure}, err
			}
			ref := fmt.Sprintf("mem:%d", len(store)+1)
			store[ref] = text
			return agent.Completion{ResultReference: ref}, nil
		})
		var ce *callError
		if err != nil && !errors.As(err, &ce) {
			return tally{}, fmt.Errorf("step %d: %w", i+1, err)
		}
		d := rep.Decision
		switch {
		case rep.Called:
			t.made++
		case d.Verdict == preflight.VerdictReuse:
			t.reused++
			_ = store[rep.ReuseReference] // the agent reads its saved result
		case d.Verdict == preflight.VerdictBlock:
			t.blocked++
		case d.Verdict == preflight.VerdictDefer:
			t.deferred++
		case d.Verdict == preflight.VerdictAdvise:
			t.skipped++
		}
		if !rep.Called {
			t.avoidedMicros[d.Verdict] += price(c)
		}
		if verbose {
			codes := make([]string, len(d.ReasonCodes))
			for j, r := range d.ReasonCodes {
				codes[j] = string(r)
			}
			fmt.Fprintf(out, "%s %-10s %-6s %-45s %s\n", req.StepID, c.Provider, d.Verdict, strings.Join(codes, ","), c.Why)
		}
	}
	t.spentMicros = p.spentMicros
	got, err := guard.SpentUSD(ctx)
	if err != nil {
		return tally{}, err
	}
	if got != usd(p.spentMicros) {
		return tally{}, fmt.Errorf("guard counted %s spent, provider charged %s", got, usd(p.spentMicros))
	}
	return t, nil
}

func printTable(out io.Writer, proposed int, without, with tally) {
	fmt.Fprintf(out, "Research session: %d proposed tool calls against a SIMULATED provider\n", proposed)
	fmt.Fprintf(out, "(simulated prices: search $%s per requested result, fetch $%s, quote $%s; budget $%s)\n\n",
		usd(searchPricePerResult), usd(fetchPrice), usd(quotePrice), usd(budgetMicros))
	row := func(name string, a, b any) { fmt.Fprintf(out, "%-16s %18v %15v\n", name, a, b) }
	row("", "without preflight", "with preflight")
	row("calls made", without.made, with.made)
	row("calls reused", without.reused, with.reused)
	row("calls blocked", without.blocked, with.blocked)
	row("calls deferred", without.deferred, with.deferred)
	row("calls skipped", without.skipped, with.skipped)
	row("dollars spent", usd(without.spentMicros), usd(with.spentMicros))
	row("over budget by", usd(max(0, without.spentMicros-budgetMicros)), usd(max(0, with.spentMicros-budgetMicros)))
	row("dollars avoided", "-", usd(without.spentMicros-with.spentMicros))
	fmt.Fprintf(out, "\nNot spent with preflight, by decision: reuse $%s, block $%s, defer $%s, advise $%s.\n",
		usd(with.avoidedMicros[preflight.VerdictReuse]), usd(with.avoidedMicros[preflight.VerdictBlock]), usd(with.avoidedMicros[preflight.VerdictDefer]),
		usd(with.avoidedMicros[preflight.VerdictAdvise]))
	fmt.Fprintln(out, "Only reuse is saved work; a blocked call would have failed anyway, and a deferred one")
	fmt.Fprintln(out, "did not fit the budget (the agent may still need it later). A skipped call named an")
	fmt.Fprintln(out, "operation one edit from a known one (a typo); the Guard does not run it by default.")
}

// usd writes micro-dollars as exact decimal dollars: 5000 → "0.005".
func usd(micros int64) json.Number {
	s := fmt.Sprintf("%d.%06d", micros/1_000_000, micros%1_000_000)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return json.Number(s)
}
