package redisledger

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
	"github.com/redis/go-redis/v9"
)

// Run with: go test -run '^$' -bench . -benchmem (a local redis-server is
// started by the benchmark). Besides ns/op each Guard benchmark reports
// calls/s, the round trips to Redis per call (counted by a client hook)
// and the microseconds Redis spent running commands per call (from INFO
// commandstats), with a history of 0 and of MaxHistory entries.

// roundTrips counts the commands a client sends, each one round trip of
// its caller whether sent alone or in a pipeline with others (n), and the
// writes that carried them (one per command or pipeline: sends).
type roundTrips struct{ n, sends atomic.Int64 }

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		h.sends.Add(1)
		return next(ctx, cmd)
	}
}
func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(int64(len(cmds)))
		h.sends.Add(1)
		return next(ctx, cmds)
	}
}

// redisStats is a snapshot of what redis-server has done, from one INFO:
// the time it spent running scripts (FCALL, EVALSHA and EVAL, the
// commands they call included) and how many it ran, the CPU time its
// process used in user and in system (kernel) mode, all times in µs, and
// the reads from its clients' connections it made (calls/reads: the calls
// each write of a client carried, with pipelining).
type redisStats struct{ scripts, calls, user, sys, reads float64 }

// cpu is the CPU time in user and system mode together, in µs.
func (st redisStats) cpu() float64 { return st.user + st.sys }

func statsOf(tb testing.TB, c redis.UniversalClient) redisStats {
	info, err := c.Info(context.Background(), "commandstats", "cpu", "stats").Result()
	if err != nil {
		tb.Fatal(err)
	}
	var st redisStats
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "used_cpu_sys:"); ok {
			f, _ := strconv.ParseFloat(v, 64)
			st.sys = f * 1e6
		}
		if v, ok := strings.CutPrefix(line, "used_cpu_user:"); ok {
			f, _ := strconv.ParseFloat(v, 64)
			st.user = f * 1e6
		}
		if v, ok := strings.CutPrefix(line, "total_reads_processed:"); ok {
			st.reads, _ = strconv.ParseFloat(v, 64)
		}
		if !strings.HasPrefix(line, "cmdstat_evalsha:") && !strings.HasPrefix(line, "cmdstat_eval:") && !strings.HasPrefix(line, "cmdstat_fcall:") {
			continue
		}
		for _, f := range strings.Split(line[strings.Index(line, ":")+1:], ",") {
			if v, ok := strings.CutPrefix(f, "usec="); ok {
				u, _ := strconv.ParseFloat(v, 64)
				st.scripts += u
			}
			if v, ok := strings.CutPrefix(f, "calls="); ok {
				n, _ := strconv.ParseFloat(v, 64)
				st.calls += n
			}
		}
	}
	return st
}

// reportCPU reports the Redis CPU time per call of b between two
// snapshots: in all, in user and in system mode.
func reportCPU(b *testing.B, from, to redisStats) {
	b.ReportMetric((to.cpu()-from.cpu())/float64(b.N), "redis-cpu-µs/call")
	b.ReportMetric((to.user-from.user)/float64(b.N), "redis-user-µs/call")
	b.ReportMetric((to.sys-from.sys)/float64(b.N), "redis-sys-µs/call")
}

// mark is where the hook's counts stand: the commands and the writes.
func (h *roundTrips) mark() (cmds, sends int64) { return h.n.Load(), h.sends.Load() }

// reportPerSend reports the commands each write carried since mark.
func (h *roundTrips) reportPerSend(b *testing.B, cmds, sends int64) {
	b.ReportMetric(float64(h.n.Load()-cmds)/float64(max(h.sends.Load()-sends, 1)), "cmds/send")
}

// BenchmarkReserveSettle is one reservation and its settlement.
func BenchmarkReserveSettle(b *testing.B) {
	p := startRedis(b)
	for _, name := range []string{"memory", "redis"} {
		b.Run(name, func(b *testing.B) {
			var s agent.LedgerStore = agent.NewMemoryLedgerStore(nil)
			if name == "redis" {
				s = newStore(b, p, "bench-rs", nil)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				id := strconv.Itoa(i)
				ok, _, err := s.Reserve(ctx, agent.Reservation{ID: id, AmountUSD: "0.012345", LimitUSD: "1000000000", Started: true})
				if !ok || err != nil {
					b.Fatal(ok, err)
				}
				if _, err := s.Settle(ctx, id, "0.01", nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGuardCall is a whole Guard.Call (balance and the history of the
// call's fingerprint read, Decide, reserve, a no-op tool, settle and
// record) with 1, 4 and 16 goroutines sharing one Guard, on a history of
// 0 or MaxHistory entries (every call has a new fingerprint, so the
// history stays full: each settlement evicts one entry).
func BenchmarkGuardCall(b *testing.B) {
	p := startRedis(b)
	scopes := 0
	for _, name := range []string{"memory", "redis"} {
		for _, history := range []int{0, preflight.MaxHistory} {
			for _, workers := range []int{1, 4, 16} {
				b.Run(fmt.Sprintf("%s/history=%d/goroutines=%d", name, history, workers), func(b *testing.B) {
					var s agent.LedgerStore = agent.NewMemoryLedgerStore(nil)
					var c redis.UniversalClient
					hook := new(roundTrips)
					if name == "redis" {
						c = p.client(b)
						c.AddHook(hook)
						scopes++
						s = newStoreOn(b, c, "bench-"+strconv.Itoa(scopes))
					}
					fillHistory(b, s, history)
					g, err := agent.NewGuard(nil, &agent.GuardOptions{Store: s, BudgetUSD: "1000000000"})
					if err != nil {
						b.Fatal(err)
					}
					var st0 redisStats
					if c != nil {
						st0 = statsOf(b, c)
					}
					trips0, sends0 := hook.mark()
					b.ReportAllocs()
					b.ResetTimer()
					start := time.Now()
					callGuards(b, []*agent.Guard{g}, workers, "b")
					took := time.Since(start)
					b.StopTimer()
					b.ReportMetric(float64(b.N)/took.Seconds(), "calls/s")
					if c != nil {
						b.ReportMetric(float64(hook.n.Load()-trips0)/float64(b.N), "roundtrips/call")
						st := statsOf(b, c)
						b.ReportMetric((st.scripts-st0.scripts)/float64(b.N), "script-µs/call")
						reportCPU(b, st0, st)
						hook.reportPerSend(b, trips0, sends0)
					}
				})
			}
		}
	}
}

// BenchmarkStoreConcurrent is a reservation and its settlement (recording
// an entry, on a full history) by each of 16 goroutines calling one Store
// at once, with and without pipelining (lanes: the sends in progress at
// once before calls queue; 2 is the default): the Store alone, without
// a Guard's decisions between its calls, all of them overlapping.
func BenchmarkStoreConcurrent(b *testing.B) {
	p := startRedis(b)
	scopes := 0
	for _, v := range []struct {
		name  string
		lanes int // 0: NoPipelining
	}{{"off", 0}, {"lanes=1", 1}, {"lanes=2", 2}} {
		b.Run(v.name, func(b *testing.B) {
			c := p.client(b)
			hook := new(roundTrips)
			c.AddHook(hook)
			scopes++
			s, err := New(c, "bench-concurrent-"+strconv.Itoa(scopes), &Options{NoPipelining: v.lanes == 0})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			if v.lanes > 0 { // NoPipelining gave every call a lane of its own
				s.batch.lanes = v.lanes
			}
			ctx := context.Background()
			fillHistory(b, s, preflight.MaxHistory)
			st0 := statsOf(b, c)
			trips0, sends0 := hook.mark()
			var next atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						id := "c" + strconv.FormatInt(i, 10)
						ok, _, err := s.ReserveOf(ctx, agent.Reservation{ID: id, AmountUSD: "0.01", LimitUSD: "1000000000", Started: true}, fmt.Sprintf("%064x", i+1000))
						if !ok || err != nil {
							b.Error(ok, err)
							return
						}
						e := agent.Entry{ToolCallID: id, Fingerprint: fmt.Sprintf("%064x", i+1000), Outcome: preflight.OutcomeSuccess, ResultReference: "r", GoalHash: "g"}
						if _, err := s.Settle(ctx, id, "0.005", &e); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			reportCPU(b, st0, statsOf(b, c))
			hook.reportPerSend(b, trips0, sends0)
		})
	}
}

// BenchmarkGuardsSharingStore is BenchmarkGuardCall's call (history full,
// 16 goroutines) with the goroutines spread over 1, 4 or 16 Guards that
// share one Store, pipelining on and off: one Guard's calls with
// different fingerprints overlap as much as several Guards' calls do.
func BenchmarkGuardsSharingStore(b *testing.B) {
	p := startRedis(b)
	scopes := 0
	for _, guards := range []int{1, 4, 16} {
		for _, off := range []bool{true, false} {
			b.Run(fmt.Sprintf("guards=%d/pipelining=%v", guards, !off), func(b *testing.B) {
				c := p.client(b)
				hook := new(roundTrips)
				c.AddHook(hook)
				scopes++
				s, err := New(c, "bench-guards-"+strconv.Itoa(scopes), &Options{NoPipelining: off})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { s.Close() })
				fillHistory(b, s, preflight.MaxHistory)
				gs := make([]*agent.Guard, guards)
				for i := range gs {
					if gs[i], err = agent.NewGuard(nil, &agent.GuardOptions{Store: s, BudgetUSD: "1000000000"}); err != nil {
						b.Fatal(err)
					}
				}
				st0 := statsOf(b, c)
				trips0, sends0 := hook.mark()
				b.ReportAllocs()
				b.ResetTimer()
				callGuards(b, gs, 16, "g")
				b.StopTimer()
				reportCPU(b, st0, statsOf(b, c))
				hook.reportPerSend(b, trips0, sends0)
			})
		}
	}
}

// BenchmarkWaitReplicas is BenchmarkGuardCall's call (history full) on a
// primary with one replica, with Options.WaitReplicas 0 and 1, by one
// goroutine and by 16 sharing one Guard: the cost of waiting for the
// replica after every call.
func BenchmarkWaitReplicas(b *testing.B) {
	primary, _ := startReplicated(b)
	scopes := 0
	for _, goroutines := range []int{1, 16} {
		for _, wait := range []int{0, 1} {
			b.Run(fmt.Sprintf("goroutines=%d/wait=%d", goroutines, wait), func(b *testing.B) {
				c := primary.client(b)
				scopes++
				s, err := New(c, "bench-wait-"+strconv.Itoa(scopes), &Options{WaitReplicas: wait})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { s.Close() })
				fillHistory(b, s, preflight.MaxHistory)
				g, err := agent.NewGuard(nil, &agent.GuardOptions{Store: s, BudgetUSD: "1000000000"})
				if err != nil {
					b.Fatal(err)
				}
				st0 := statsOf(b, c)
				b.ReportAllocs()
				b.ResetTimer()
				callGuards(b, []*agent.Guard{g}, goroutines, "w")
				b.StopTimer()
				b.ReportMetric((statsOf(b, c).cpu()-st0.cpu())/float64(b.N), "primary-cpu-µs/call")
			})
		}
	}
}

func newStoreOn(b *testing.B, c redis.UniversalClient, scope string) *Store {
	s, err := New(c, scope, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkFloor is the least a store of this design can cost Redis per
// call that runs, with 16 goroutines: two round trips of a script that
// does nothing ("return 1"); two of a script that only defines the
// store's Lua helpers (the prelude, which a script runs anew each time
// and a library of functions once); and "commands", the Redis commands
// of a call that runs and nothing else (a reservation's HMGET, TIME and
// HSET; a settlement's HMGET, TIME, HGET of an evicted entry's bucket
// and HSET, with fields of the sizes the store writes), so that
// redis-cpu-µs/call of the store minus that of "commands" is what its
// Lua logic costs. redis-cpu-µs/call minus script-µs/call is Redis's
// cost of the round trips themselves (reading, parsing, replying, the
// event loop, the AOF).
func BenchmarkFloor(b *testing.B) {
	p := startRedis(b)
	keys := []string{"preflight:{floor}:s", "preflight:{floor}:l", "preflight:{floor}:d"}
	same := func(sc *redis.Script) func(context.Context, redis.UniversalClient, int64) error {
		return func(ctx context.Context, c redis.UniversalClient, _ int64) error {
			for range 2 {
				if err := sc.Run(ctx, c, keys, "", 0, "e", 0, 0).Err(); err != nil {
					return err
				}
			}
			return nil
		}
	}
	reserve := redis.NewScript(`
local v = redis.call('HMGET', KEYS[1], 'epoch', 'c', 'lost', 'r:' .. ARGV[1], 'H3', 'f:17')
local t = redis.call('TIME')
redis.call('HSET', KEYS[1], 'c', ARGV[2], 'r:' .. ARGV[1], 'h 10000000000 0 1 1764230000000', 'H3', ARGV[1])
return {v[1] or 'e', 1, 0, 0, 0, 0, 1, 1, t[1], ''}`)
	settle := redis.NewScript(`
local v = redis.call('HMGET', KEYS[1], 'epoch', 'c', 'lost', 'r:' .. ARGV[1], 'H3', 'f:17', 'q0', 'q1', 'q2', 'q3')
local t = redis.call('TIME')
local w = redis.call('HGET', KEYS[1], 'f:9')
redis.call('HSET', KEYS[1], 'c', ARGV[2], 'r:' .. ARGV[1], '0 5000000000000 0 1764230000000 0123456789abcdef', 'H3', '',
  'x:' .. ARGV[1], '1764230000000 ' .. ARGV[1], 'f:17', ARGV[3], 'q1', ARGV[4], 'f:9', '')
return {v[1] or 'e', 1, 0, 0, 0, 0, 1, 0, 0, 5000000000000, 0}`)
	counters := strings.Repeat("c", 104)
	line := "1" + strings.Repeat("e", 220)
	queue := strings.TrimSpace(strings.Repeat("517 ", 100))
	commands := func(ctx context.Context, c redis.UniversalClient, i int64) error {
		id := "b" + strconv.FormatInt(i, 10)
		if err := reserve.Run(ctx, c, keys[:1], id, counters).Err(); err != nil {
			return err
		}
		return settle.Run(ctx, c, keys[:1], id, counters, line, queue).Err()
	}
	for _, s := range []struct {
		name string
		call func(context.Context, redis.UniversalClient, int64) error
	}{
		{"empty", same(redis.NewScript(`return 1`))},
		{"prelude", same(redis.NewScript(prelude + `return 1`))},
		{"commands", commands},
	} {
		b.Run(s.name, func(b *testing.B) {
			c := p.client(b)
			if err := s.call(context.Background(), c, 0); err != nil {
				b.Fatal(err)
			}
			st0 := statsOf(b, c)
			var next atomic.Int64
			b.ResetTimer()
			var wg sync.WaitGroup
			for range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						if err := s.call(context.Background(), c, i); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			st := statsOf(b, c)
			b.ReportMetric((st.scripts-st0.scripts)/float64(b.N), "script-µs/call")
			b.ReportMetric((st.cpu()-st0.cpu())/float64(b.N), "redis-cpu-µs/call")
		})
	}
}

// BenchmarkFunctions is the time Redis spends in each function of a call
// that runs (a reservation that reads a fingerprint's history, and a
// settlement that records an entry and, the history being full, evicts
// one), from SLOWLOG with a threshold of 0: the median µs of each, the
// network and the AOF's write left out. (SLOWLOG times each command
// called from Lua too; the functions' own times include them.)
func BenchmarkFunctions(b *testing.B) {
	p := startRedis(b)
	c := p.client(b)
	ctx := context.Background()
	s := newStoreOn(b, c, "functions")
	fillHistory(b, s, preflight.MaxHistory)
	for _, kv := range [][2]string{{"slowlog-max-len", "1000000"}, {"slowlog-log-slower-than", "0"}} {
		if err := c.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			b.Fatal(err)
		}
	}
	if err := c.SlowLogReset(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	for i := 0; b.Loop(); i++ {
		id, fp := "f"+strconv.Itoa(i), fmt.Sprintf("%064x", 1000+i)
		if ok, _, err := s.ReserveOf(ctx, agent.Reservation{ID: id, AmountUSD: "0.01", LimitUSD: "1000000000", Started: true}, fp); !ok || err != nil {
			b.Fatal(ok, err)
		}
		e := agent.Entry{ToolCallID: id, Fingerprint: fp, Outcome: preflight.OutcomeSuccess, GoalHash: "g"}
		if _, err := s.Settle(ctx, id, "0.005", &e); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	logs, err := c.SlowLogGet(ctx, -1).Result()
	if err != nil {
		b.Fatal(err)
	}
	_, _, names := library()
	for _, sc := range []*script{reserveScript, settleScript} {
		var us []float64
		for _, l := range logs {
			if len(l.Args) > 1 && strings.EqualFold(l.Args[0], "fcall") && l.Args[1] == names[sc] {
				us = append(us, float64(l.Duration.Microseconds()))
			}
		}
		if len(us) == 0 {
			b.Fatalf("no FCALL of %s in SLOWLOG", names[sc])
		}
		slices.Sort(us)
		b.ReportMetric(us[len(us)/2], sc.name+"-µs")
	}
}

// callGuards makes b.N Guard calls, each with a new fingerprint (its id
// is prefix and a number), from goroutines goroutines, goroutine w
// calling guards[w%len(guards)]; a call that fails or does not run fails
// the benchmark.
func callGuards(b *testing.B, guards []*agent.Guard, goroutines int, prefix string) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range goroutines {
		g := guards[w%len(guards)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				id := prefix + strconv.FormatInt(i, 10)
				req := searchRequest(id, "0.01", false)
				req.StepID = id
				r, err := g.Call(context.Background(), req, func(context.Context) (agent.Completion, error) {
					return agent.Completion{CostUSD: "0.005"}, nil
				})
				if err != nil || !r.Called {
					b.Error(r.Decision, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// fillHistory records n entries in s, each with a fingerprint of its own.
func fillHistory(b *testing.B, s agent.LedgerStore, n int) {
	for i := range n {
		e := agent.Entry{ToolCallID: "h" + strconv.Itoa(i), Fingerprint: fmt.Sprintf("%064x", i+1), Outcome: preflight.OutcomeSuccess, ResultReference: "r", GoalHash: "g"}
		if err := s.Append(context.Background(), e); err != nil {
			b.Fatal(err)
		}
	}
}
