package report

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/agentpreflight/preflight/benchmarks"
	"github.com/agentpreflight/preflight/benchmarks/load"
	"github.com/agentpreflight/preflight/server"
)

// loadTarget is one route and request body of the server comparison.
type loadTarget struct {
	Route      string // as shown, such as "POST /check-request"
	Path       string
	CorpusFile string // in the shared corpus
}

var loadTargets = []loadTarget{
	{"POST /v0.2/preflight/tool-call", "/v0.2/preflight/tool-call", "decide_history_010.json"},
	{"POST /check-request", "/check-request", "check_nested_order_valid.json"},
	{"POST /check-request", "/check-request", "check_array_200_valid.json"},
}

// Server names of the comparison.
const (
	serverPreflight = "preflight server.New"
	serverBare      = "bare net/http + Unmarshal"
)

// loadSide is one server's measurements on one target.
type loadSide struct {
	Server    string
	RPS       []float64 // one per round
	Requests  int       // over all rounds
	MedianRPS float64
	P50, P99  time.Duration // over all rounds' requests
}

// loadResult compares both servers on one target.
type loadResult struct {
	Target          loadTarget
	BodyBytes       int
	Preflight, Bare loadSide
	Ratio           float64 // Preflight.MedianRPS / Bare.MedianRPS
}

// runLoad measures both servers, in-process listeners on 127.0.0.1 started
// the same way, with the same generator, alternating which goes first in
// each round.
func runLoad(ctx context.Context, o Options) ([]loadResult, error) {
	pf, err := load.Listen(server.New(server.Config{}))
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	bare, err := load.Listen(load.BareHandler())
	if err != nil {
		return nil, err
	}
	defer bare.Close()

	cfg := load.Config{Clients: o.LoadClients, Duration: o.LoadDuration}
	var out []loadResult
	for _, t := range loadTargets {
		body, err := os.ReadFile(filepath.Join(benchmarks.CorpusDir(), t.CorpusFile))
		if err != nil {
			return nil, err
		}
		res := loadResult{Target: t, BodyBytes: len(body)}
		var latP, latB []time.Duration
		for round := range o.LoadRounds {
			order := []string{serverBare, serverPreflight}
			if round%2 == 1 {
				order = []string{serverPreflight, serverBare}
			}
			for _, name := range order {
				addr, side, lat := bare.Addr, &res.Bare, &latB
				if name == serverPreflight {
					addr, side, lat = pf.Addr, &res.Preflight, &latP
				}
				logf(o, "load %s %s (%s) round %d/%d", name, t.Route, t.CorpusFile, round+1, o.LoadRounds)
				st, err := load.Drive(ctx, addr, t.Path, body, cfg)
				if err != nil {
					return nil, fmt.Errorf("load %s %s: %w", name, t.Route, err)
				}
				side.Server = name
				side.RPS = append(side.RPS, st.RPS())
				side.Requests += st.Requests
				*lat = append(*lat, st.Latencies...)
			}
		}
		for _, s := range []struct {
			side *loadSide
			lat  []time.Duration
		}{{&res.Preflight, latP}, {&res.Bare, latB}} {
			s.side.MedianRPS = median(s.side.RPS)
			s.side.P50 = load.Percentile(s.lat, 50)
			s.side.P99 = load.Percentile(s.lat, 99)
		}
		if res.Bare.MedianRPS > 0 {
			res.Ratio = res.Preflight.MedianRPS / res.Bare.MedianRPS
		}
		out = append(out, res)
	}
	return out, nil
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
