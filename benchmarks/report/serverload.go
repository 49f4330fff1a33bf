package report

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/agentpreflight/preflight/benchmarks"
	"github.com/agentpreflight/preflight/benchmarks/load"
)

// loadTarget is one route and request body of the server comparison.
type loadTarget struct {
	Route      string // as shown, such as "POST /check-request"
	Path       string
	Name       string // the body as shown: a corpus file or a description
	CorpusFile string // in the shared corpus; empty when Body is set
	Body       func() []byte
}

// body returns the target's request body.
func (t loadTarget) body() ([]byte, error) {
	if t.Body != nil {
		return t.Body(), nil
	}
	return os.ReadFile(filepath.Join(benchmarks.CorpusDir(), t.CorpusFile))
}

// loadTargets are the bodies of the server comparison: the four of issue
// #38 (a small decision, a 2.9 KB email check, a 4.8 KB check of a base64
// attachment under a pattern, a decision over a 100-entry history), then a
// 10-entry history decision, a nested order and a 200-item array.
var loadTargets = []loadTarget{
	{"POST /v0.2/preflight/tool-call", "/v0.2/preflight/tool-call", "decide_history_000.json", "decide_history_000.json", nil},
	{"POST /check-request", "/check-request", "email check (2.9 KB)", "", emailCheckBody},
	{"POST /check-request", "/check-request", "base64 attachment check (4.8 KB)", "", base64CheckBody},
	{"POST /v0.2/preflight/tool-call", "/v0.2/preflight/tool-call", "decide_history_100.json", "decide_history_100.json", nil},
	{"POST /v0.2/preflight/tool-call", "/v0.2/preflight/tool-call", "decide_history_010.json", "decide_history_010.json", nil},
	{"POST /check-request", "/check-request", "check_nested_order_valid.json", "check_nested_order_valid.json", nil},
	{"POST /check-request", "/check-request", "check_array_200_valid.json", "check_array_200_valid.json", nil},
}

// emailCheckBody is a check of an email send, about 2.9 KB: a text body
// and addresses under patterns (the body of preflightd's BenchmarkServe).
func emailCheckBody() []byte {
	text := strings.Repeat("Hello team, the quarterly figures are attached for review before Friday. ", 31)
	return []byte(`{"request":{"method":"POST","url":"https://mail.example.com/v1/messages","headers":{"Content-Type":"application/json"},` +
		`"body":{"from":"ops@example.com","to":["alice@example.com","bob@example.org"],"subject":"Quarterly figures","text":"` + text + `"}},` +
		`"schema":{"type":"object","required":["from","to","subject","text"],"additionalProperties":false,"properties":{` +
		`"from":{"type":"string","pattern":"^[^@\\s]+@[^@\\s]+\\.[a-z]+$"},` +
		`"to":{"type":"array","items":{"type":"string","pattern":"^[^@\\s]+@[^@\\s]+\\.[a-z]+$"}},` +
		`"subject":{"type":"string","minLength":1,"maxLength":200},"text":{"type":"string","maxLength":100000}}}}`)
}

// base64CheckBody is a check of an email with a 4.5 KB base64 attachment
// whose content is under a base64 pattern, about 4.8 KB in all.
func base64CheckBody() []byte {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	content := make([]byte, 4500)
	for i := range content {
		content[i] = alphabet[(i*37+11)%64]
	}
	return []byte(`{"request":{"method":"POST","url":"https://mail.example.com/v1/messages","headers":{"Content-Type":"application/json"},` +
		`"body":{"to":"alice@example.com","subject":"Invoice","attachments":[{"filename":"invoice.pdf","contentType":"application/pdf","content":"` + string(content) + `"}]}},` +
		`"schema":{"type":"object","required":["to","subject","attachments"],"properties":{` +
		`"to":{"type":"string","pattern":"^[^@\\s]+@[^@\\s]+$"},"subject":{"type":"string","maxLength":200},` +
		`"attachments":{"type":"array","items":{"type":"object","required":["filename","content"],"properties":{` +
		`"filename":{"type":"string","pattern":"^[^/\\\\]+$"},"contentType":{"type":"string"},` +
		`"content":{"type":"string","pattern":"^[A-Za-z0-9+/]*={0,2}$","maxLength":60000}}}}}}}`)
}

// Server names of the comparison.
const (
	serverPreflight = "preflightd"
	serverBare      = "bare net/http + Unmarshal"
	serverBaseline  = "preflightd (baseline)"
)

// loadMode is a way of giving the servers CPUs.
type loadMode struct {
	Name       string
	GOMAXPROCS int // of the server
	ServerCPU  int // the server's CPU; -1: unpinned
	GenCPU     int // the generator's CPU; -1: unpinned
	Clients    int
}

// loadModes are the two settings of the comparison: the server on one
// core, pinned, the generator pinned to another; and the server with
// GOMAXPROCS=4, unpinned, under four times the connections. On a machine
// with fewer than 4 CPUs the second mode oversubscribes them, which the
// report says.
func loadModes(o Options) []loadMode {
	gen := 1
	if runtime.NumCPU() < 2 {
		gen = -1 // one CPU: the generator shares it (the report says so)
	}
	return []loadMode{
		{Name: "1 core", GOMAXPROCS: 1, ServerCPU: 0, GenCPU: gen, Clients: o.LoadClients},
		{Name: "4 cores", GOMAXPROCS: 4, ServerCPU: -1, GenCPU: -1, Clients: 4 * o.LoadClients},
	}
}

// loadSide is one server's measurements on one target.
type loadSide struct {
	Server     string
	RPS        []float64 // one per round
	Requests   int       // over all rounds
	MedianRPS  float64
	P50, P99   time.Duration // over all rounds' requests
	CPUPerReq  time.Duration // server CPU time (user+system) per request, over all rounds
	cpu        time.Duration
	cpuSamples int
}

// loadResult compares both servers on one target in one mode.
type loadResult struct {
	Mode            loadMode
	Target          loadTarget
	BodyBytes       int
	Preflight, Bare loadSide
	Ratio           float64 // Preflight.MedianRPS / Bare.MedianRPS
	// CPURatio is Bare.CPUPerReq / Preflight.CPUPerReq: the req/s ratio
	// the server's CPU time alone allows, steadier than Ratio on a busy
	// machine.
	CPURatio float64
	// Baseline is Options.LoadBaseline's server (Server empty when none),
	// with its ratios to Bare as Ratio and CPURatio are preflightd's.
	Baseline                        loadSide
	BaselineRatio, BaselineCPURatio float64
}

// runLoad builds preflightd and floorserver and, in each mode, starts both
// as processes of their own, then drives each target on both with the
// same generator, alternating which server goes first in each round.
func runLoad(ctx context.Context, o Options) ([]loadResult, error) {
	tmp, err := os.MkdirTemp("", "preflight-load-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	pfBin, bareBin, err := buildLoadServers(ctx, o, tmp)
	if err != nil {
		return nil, err
	}
	modeRE, err := regexp.Compile(o.LoadModes)
	if err != nil {
		return nil, fmt.Errorf("load modes: %w", err)
	}
	var out []loadResult
	for _, mode := range loadModes(o) {
		if !modeRE.MatchString(mode.Name) {
			continue
		}
		res, err := runLoadMode(ctx, o, mode, pfBin, bareBin, tmp)
		if err != nil {
			return nil, err
		}
		out = append(out, res...)
	}
	return out, nil
}

// buildLoadServers compiles preflightd (in the workspace, as a user would
// build it) and floorserver into dir.
func buildLoadServers(ctx context.Context, o Options, dir string) (pf, bare string, err error) {
	pf, bare = filepath.Join(dir, "preflightd"), filepath.Join(dir, "floorserver")
	logf(o, "building preflightd and floorserver")
	if _, err := command(ctx, filepath.Dir(o.ModuleDir), "go", "build", "-o", pf, "./server/cmd/preflightd"); err != nil {
		return "", "", err
	}
	if _, err := command(ctx, o.ModuleDir, "go", "build", "-o", bare, "./cmd/floorserver"); err != nil {
		return "", "", err
	}
	return pf, bare, nil
}

func runLoadMode(ctx context.Context, o Options, mode loadMode, pfBin, bareBin, logDir string) (_ []loadResult, err error) {
	start := func(bin string) (*load.Proc, error) {
		return load.StartProc(ctx, load.ProcConfig{Bin: bin, GOMAXPROCS: mode.GOMAXPROCS, CPU: mode.ServerCPU, LogDir: logDir})
	}
	pf, err := start(pfBin)
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	bare, err := start(bareBin)
	if err != nil {
		return nil, err
	}
	defer bare.Close()
	servers := []string{serverBare, serverPreflight}
	procOf := map[string]*load.Proc{serverBare: bare, serverPreflight: pf}
	if o.LoadBaseline != "" {
		base, err := start(o.LoadBaseline)
		if err != nil {
			return nil, err
		}
		defer base.Close()
		servers = append(servers, serverBaseline)
		procOf[serverBaseline] = base
	}
	bodyRE, err := regexp.Compile(o.LoadBodies)
	if err != nil {
		return nil, fmt.Errorf("load bodies: %w", err)
	}
	procs := runtime.GOMAXPROCS(0)
	if err := load.PinSelf(mode.GenCPU); err != nil {
		return nil, err
	}
	defer func() {
		if perr := load.PinSelf(-1); err == nil {
			err = perr
		}
		runtime.GOMAXPROCS(procs)
	}()

	cfg := load.Config{Clients: mode.Clients, Duration: o.LoadDuration}
	var out []loadResult
	for _, t := range loadTargets {
		if !bodyRE.MatchString(t.Name) {
			continue
		}
		body, err := t.body()
		if err != nil {
			return nil, err
		}
		res := loadResult{Mode: mode, Target: t, BodyBytes: len(body)}
		sides := map[string]*loadSide{serverBare: &res.Bare, serverPreflight: &res.Preflight, serverBaseline: &res.Baseline}
		lats := map[string][]time.Duration{}
		for round := range o.LoadRounds {
			order := slices.Clone(servers)
			if round%2 == 1 {
				slices.Reverse(order)
			}
			for _, name := range order {
				proc, side := procOf[name], sides[name]
				lat := lats[name]
				logf(o, "load %s: %s %s (%s) round %d/%d", mode.Name, name, t.Route, t.Name, round+1, o.LoadRounds)
				cpu0 := proc.CPUTime()
				st, err := load.Drive(ctx, proc.Addr, t.Path, body, cfg)
				if err != nil {
					return nil, fmt.Errorf("load %s %s %s: %w", mode.Name, name, t.Route, err)
				}
				// The CPU time covers the uncounted warm-up too; so does the
				// request count it is divided by.
				side.cpu += proc.CPUTime() - cpu0
				side.cpuSamples += st.Requests + st.WarmupRequests
				side.Server = name
				side.RPS = append(side.RPS, st.RPS())
				side.Requests += st.Requests
				lats[name] = append(lat, st.Latencies...)
			}
		}
		for _, name := range servers {
			side, lat := sides[name], lats[name]
			side.MedianRPS = median(side.RPS)
			side.P50 = load.Percentile(lat, 50)
			side.P99 = load.Percentile(lat, 99)
			if side.cpuSamples > 0 {
				side.CPUPerReq = side.cpu / time.Duration(side.cpuSamples)
			}
		}
		res.Ratio, res.CPURatio = res.Preflight.ratios(res.Bare)
		res.BaselineRatio, res.BaselineCPURatio = res.Baseline.ratios(res.Bare)
		out = append(out, res)
	}
	return out, nil
}

// ratios returns s's median req/s divided by bare's and bare's CPU time
// per request divided by s's (zero where a divisor is zero).
func (s loadSide) ratios(bare loadSide) (rps, cpu float64) {
	if bare.MedianRPS > 0 {
		rps = s.MedianRPS / bare.MedianRPS
	}
	if s.CPUPerReq > 0 {
		cpu = float64(bare.CPUPerReq) / float64(s.CPUPerReq)
	}
	return rps, cpu
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// RunServerLoad runs only the server comparison of [Run] and writes its
// section of the report, as Markdown, to w. BENCHMARKS.md is not touched.
func RunServerLoad(ctx context.Context, o Options, w io.Writer) error {
	o, err := o.withDefaults()
	if err != nil {
		return err
	}
	m := probeMachine("go", filepath.Dir(o.ModuleDir))
	r := &results{opts: o, machine: m}
	if r.load, err = runLoad(ctx, o); err != nil {
		return err
	}
	r.machine.end()
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("Machine: %s, %d CPUs, %s; load average %s at start, %s at end", m.CPU, m.Cores, m.GoVersion, strings.TrimSpace(m.LoadStart), strings.TrimSpace(r.machine.LoadEnd))
	if r.machine.OthersKnown {
		p("; other processes' CPU during the run %.2f CPUs on average", r.machine.Others)
	}
	p(".\n\n")
	if busy := busyMachine(r.machine); busy != "" {
		p("> **Warning: the machine was busy** (%s). Timings from a busy machine are unreliable.\n\n", busy)
	}
	r.loadSection(p)
	return nil
}
