package report

// The tool-schema comparison of issue #37: BenchmarkToolSchemas validates
// arguments against every real MCP tool schema of the repository, per
// iteration, bytes in to verdict out on every side.

// Implementations of BenchmarkToolSchemas, in the order the table lists
// them, with their column names.
var toolImpls = []struct{ name, short string }{
	{"preflight_warm", "preflight warm (`CheckArguments`)"},
	{"santhosh_warm", "santhosh warm"},
	{"google_warm", "google warm"},
	{"preflight_warm_decide", "preflight warm, whole `Decide`"},
	{"preflight_cold", "preflight cold"},
	{"santhosh_cold", "santhosh cold"},
	{"google_cold", "google cold"},
}

// targetToolWarm: santhosh warm time ÷ preflight warm time, every row.
const targetToolWarm = 1.0

// toolRowText says what each row of BenchmarkToolSchemas validates.
var toolRowText = map[string]string{
	"empty": "`{}` (most tools refuse it: a required member is missing)",
	"typed": "every listed property given a value of its declared type (most tools accept it)",
}

// toolTargets writes the tool-schema rows of the Targets table.
func (r *results) toolTargets(p func(string, ...any)) {
	t := r.tools
	if t == nil {
		p("| Real tool schemas: warm `CheckArguments` no slower than santhosh-tekuri warm | – | not measured |\n")
		return
	}
	f := ratio(t, "santhosh_warm", "preflight_warm")
	for _, row := range t.Cases {
		v, ok := f(row)
		p("| Real tool schemas (%s): warm `CheckArguments` no slower than santhosh-tekuri warm (speed-up ≥ 1) | %s | %s |\n",
			row, fmtRatio(v), verdict(ok, v >= targetToolWarm))
	}
}

// toolSection writes the tool-schema comparison.
func (r *results) toolSection(p func(string, ...any)) {
	t := r.tools
	p("## Tool schemas: arguments against real MCP tool schemas\n\n")
	p("Each iteration validates one set of arguments against every tool schema under `testdata/catalog/`, `testdata/mcp-tools/` and the reference server's `tools/list`, as bytes: every implementation parses the arguments inside its loop. ")
	p("*preflight warm* is `Catalog.CheckArguments` on a catalog built before the loop (parse, validate, build the issues); *santhosh warm* and *google warm* validate against a schema compiled before the loop. ")
	p("*whole `Decide`* is a full tool-call decision with those arguments, which also hashes the call (SHA-256 over its canonical form) and applies the history and budget rules: it is shown, not compared. ")
	p("Cold runs build a catalog (preflight, with its cache of compiled schemas off) or compile the schema on every call. Rows: ")
	for i, row := range t.Cases {
		if i > 0 {
			p("; ")
		}
		text := toolRowText[row]
		if text == "" {
			text = row
		}
		p("*%s* = %s", row, text)
	}
	p(".\n\n| arguments |")
	for _, im := range toolImpls {
		p(" %s |", im.short)
	}
	p(" warm vs santhosh warm (target ≥ 1) | warm vs google warm | CPU: warm vs santhosh warm |\n|---|")
	for range toolImpls {
		p("---:|")
	}
	p("---:|---:|---:|\n")
	vsS := ratio(t, "santhosh_warm", "preflight_warm")
	vsG := ratio(t, "google_warm", "preflight_warm")
	for _, row := range t.Cases {
		p("| %s |", row)
		for _, im := range toolImpls {
			if m := t.get(row, im.name); m.HasNs {
				p(" %s |", formatNs(m.NsPerOp))
			} else {
				p(" – |")
			}
		}
		s, sok := vsS(row)
		g, _ := vsG(row)
		mk := ""
		if sok {
			mk = " " + mark(s >= targetToolWarm)
		}
		cpu := "–"
		if a, b := t.get(row, "santhosh_warm"), t.get(row, "preflight_warm"); a.HasCPU && b.HasCPU && b.CPUNsPerOp > 0 {
			cpu = fmtRatio(a.CPUNsPerOp / b.CPUNsPerOp)
		}
		p(" %s%s | %s | %s |\n", fmtRatio(s), mk, fmtRatio(g), cpu)
	}
	p("\nTimes are per pass over all the schemas. Speed-ups are peer time ÷ preflight time; the CPU column divides the process's CPU time per pass (user + system, every thread), which other work on a shared machine does not inflate.\n\n")
}
