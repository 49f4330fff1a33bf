package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// kindStats are the results of one kind of request.
type kindStats struct {
	count     int64
	latencies []time.Duration
}

// result is what the clients saw.
type result struct {
	elapsed  time.Duration
	total    int64
	byStatus map[int]int64
	kinds    map[string]*kindStats
	fivexx   int64
	connErrs int64
	wrong    int64
	firstBad []string // the first few problems, for the report
	all      []time.Duration
}

// drive runs o.clients workers against base until o.duration has passed or
// o.requests requests were sent.
func drive(ctx context.Context, base string, cases []loadCase, o options) *result {
	var sent atomic.Int64
	res := runClients(ctx, o, func(ctx context.Context, client *http.Client, w int) *result {
		local := &result{byStatus: map[int]int64{}, kinds: map[string]*kindStats{}}
		for i := w; ctx.Err() == nil; i++ {
			if sent.Add(1) > o.requests {
				break
			}
			c := &cases[i%len(cases)]
			t0 := time.Now()
			status, body, err := send(ctx, client, base, c)
			lat := time.Since(t0)
			if err != nil && ctx.Err() != nil {
				break // the run ended while this request was in flight
			}
			local.total++
			ks := local.kinds[c.kind]
			if ks == nil {
				ks = &kindStats{}
				local.kinds[c.kind] = ks
			}
			ks.count++
			ks.latencies = append(ks.latencies, lat)
			switch {
			case err != nil:
				local.connErrs++
				local.note(c.name + ": connection error: " + err.Error())
				continue
			case status >= 500:
				local.fivexx++
			}
			local.byStatus[status]++
			if msg := c.check(status, body); msg != "" {
				local.wrong++
				local.note(c.name + ": " + msg)
			}
		}
		return local
	})
	for _, ks := range res.kinds {
		res.all = append(res.all, ks.latencies...)
	}
	return res
}

// runClients runs o.clients workers, each given its number and one shared
// keep-alive HTTP client, until they return or o.duration has passed, and
// merges their results.
func runClients(ctx context.Context, o options, work func(ctx context.Context, client *http.Client, w int) *result) *result {
	ctx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	transport := &http.Transport{MaxIdleConnsPerHost: o.clients, MaxConnsPerHost: o.clients, DisableCompression: true}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: time.Minute}
	var mu sync.Mutex
	res := &result{byStatus: map[int]int64{}, kinds: map[string]*kindStats{}}
	start := time.Now()
	var wg sync.WaitGroup
	for w := range o.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := work(ctx, client, w)
			mu.Lock()
			res.merge(local)
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	return res
}

func (r *result) note(msg string) {
	if len(r.firstBad) < 5 {
		r.firstBad = append(r.firstBad, msg)
	}
}

func (r *result) merge(o *result) {
	r.total += o.total
	r.fivexx += o.fivexx
	r.connErrs += o.connErrs
	r.wrong += o.wrong
	for s, n := range o.byStatus {
		r.byStatus[s] += n
	}
	for k, ks := range o.kinds {
		if r.kinds[k] == nil {
			r.kinds[k] = &kindStats{}
		}
		r.kinds[k].count += ks.count
		r.kinds[k].latencies = append(r.kinds[k].latencies, ks.latencies...)
	}
	for _, m := range o.firstBad {
		r.note(m)
	}
}

// send makes one request and reads the whole answer.
func send(ctx context.Context, client *http.Client, base string, c *loadCase) (int, []byte, error) {
	var body io.Reader
	if c.body != nil {
		body = bytes.NewReader(c.body)
	}
	req, err := http.NewRequestWithContext(ctx, c.method, base+c.path, body)
	if err != nil {
		return 0, nil, err
	}
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}
