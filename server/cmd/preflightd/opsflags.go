package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/agentpreflight/preflight/server"
	"github.com/agentpreflight/preflight/server/internal/x402"
)

// opsOptions are the operator's knobs: timeouts, bounds and the metrics
// listener.
type opsOptions struct {
	readHeaderTimeout time.Duration
	readTimeout       time.Duration
	writeTimeout      time.Duration
	idleTimeout       time.Duration
	verifyTimeout     time.Duration
	settleTimeout     time.Duration
	shutdownTimeout   time.Duration
	metricsAddr       string
	paymentTimeoutSet bool // --verify-timeout or --settle-timeout given (flag or environment)

	maxConnections      int           // 0: derived from RLIMIT_NOFILE at start (connectionBound)
	pressureIdleTimeout time.Duration // idle timeout past 3/4 of maxConnections
	maxFacilitatorCalls int
	facilitatorCallsSet bool // --max-facilitator-calls given (flag or environment)
}

// defaultMaxConnections caps the derived connection bound: measured
// through the binary, a flood of idle connections at the bound peaks near
// 25 KiB of RSS per connection (goroutine, buffers, and the garbage of the
// ones closed under pressure), so 4,096 stay near 100 MiB.
const defaultMaxConnections = 4096

// minConnections is the smallest connection bound the server starts with.
const minConnections = 16

// maxFacilitatorCallsLimit is the largest --max-facilitator-calls accepted.
const maxFacilitatorCallsLimit = 4096

// defaultOps are the values used when no flag or variable is given; they
// are the server's historical constants.
func defaultOps() opsOptions {
	return opsOptions{
		readHeaderTimeout: 5 * time.Second,
		readTimeout:       30 * time.Second,
		writeTimeout:      60 * time.Second, // covers read + slot wait + verify + settle + answer (59 s) on the paid route
		idleTimeout:       120 * time.Second,
		verifyTimeout:     x402.DefaultVerifyTimeout,
		settleTimeout:     x402.DefaultSettleTimeout,
		shutdownTimeout:   30 * time.Second,

		pressureIdleTimeout: 5 * time.Second, // as the header timeout: a waiting connection under pressure gets what a new one gets
		maxFacilitatorCalls: x402.DefaultMaxFacilitatorCalls,
	}
}

// intFlag is an int flag whose default may come from an environment
// variable.
type intFlag struct {
	n   *int
	set *bool // when non-nil, becomes true when the flag is given
}

func (f intFlag) String() string {
	if f.n == nil {
		return ""
	}
	return strconv.Itoa(*f.n)
}

func (f intFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("%q is not an integer", s)
	}
	*f.n = n
	if f.set != nil {
		*f.set = true
	}
	return nil
}

// maxFacilitatorTimeout is the longest verify or settle timeout accepted: the
// facilitator client waits at most 20 s for an answer's headers.
const maxFacilitatorTimeout = 20 * time.Second

// answerMargin is the time a paid request needs besides its body, the
// wait for an evaluation slot and the facilitator: deciding and writing the
// answer (a few kilobytes).
const answerMargin = 2 * time.Second

// maxServerTimeout bounds the server's own timeouts, to catch a unit typo
// (30m for 30s) at start.
const maxServerTimeout = time.Hour

// durationFlag is a time.Duration flag whose default may come from an
// environment variable.
type durationFlag struct {
	d   *time.Duration
	set *bool // when non-nil, becomes true when the flag is given
}

func (f durationFlag) String() string {
	if f.d == nil {
		return ""
	}
	return f.d.String()
}

func (f durationFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration such as 500ms, 30s or 2m", s)
	}
	*f.d = d
	if f.set != nil {
		*f.set = true
	}
	return nil
}

// register adds the operator flags to fs, with environment variables (read
// through env) as defaults.
func (o *opsOptions) register(fs *flag.FlagSet, getenv func(string) string) error {
	*o = defaultOps()
	var errs []error
	duration := func(d *time.Duration, set *bool, name, envName, usage string) {
		f := durationFlag{d: d, set: set}
		if v := getenv(envName); v != "" {
			if err := f.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q is not a duration such as 500ms, 30s or 2m", envName, v))
			}
		}
		fs.Var(f, name, usage+" (env "+envName+")")
	}
	duration(&o.readHeaderTimeout, nil, "read-header-timeout", "PREFLIGHT_READ_HEADER_TIMEOUT", "longest wait for a request's headers")
	duration(&o.readTimeout, nil, "read-timeout", "PREFLIGHT_READ_TIMEOUT", "longest wait for a whole request, body included")
	duration(&o.writeTimeout, nil, "write-timeout", "PREFLIGHT_WRITE_TIMEOUT", "longest time to answer a request once its headers are read; paid: at least read + verify + settle timeouts + "+(server.MaxEvaluationWait+answerMargin).String())
	duration(&o.idleTimeout, nil, "idle-timeout", "PREFLIGHT_IDLE_TIMEOUT", "how long an idle keep-alive connection stays open")
	duration(&o.verifyTimeout, &o.paymentTimeoutSet, "verify-timeout", "PREFLIGHT_VERIFY_TIMEOUT", "longest wait for the facilitator's /verify (at most 20s)")
	duration(&o.settleTimeout, &o.paymentTimeoutSet, "settle-timeout", "PREFLIGHT_SETTLE_TIMEOUT", "longest wait for the facilitator's /settle (at most 20s)")
	duration(&o.shutdownTimeout, nil, "shutdown-timeout", "PREFLIGHT_SHUTDOWN_TIMEOUT", "grace period for requests in flight after SIGTERM or SIGINT; paid: at least verify + settle timeouts + "+answerMargin.String())
	integer := func(n *int, set *bool, name, envName, usage string) {
		f := intFlag{n: n, set: set}
		if v := getenv(envName); v != "" {
			if err := f.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q is not an integer", envName, v))
			}
		}
		fs.Var(f, name, usage+" (env "+envName+")")
	}
	integer(&o.maxConnections, nil, "max-connections", "PREFLIGHT_MAX_CONNECTIONS",
		"most connections open at once; beyond it the longest-idle one is closed or the new one gets 503 server_busy; "+
			"0 means the file-descriptor limit less a reserve for outbound sockets, at most "+strconv.Itoa(defaultMaxConnections))
	duration(&o.pressureIdleTimeout, nil, "idle-timeout-under-pressure", "PREFLIGHT_IDLE_TIMEOUT_UNDER_PRESSURE",
		"the idle timeout once more than 3/4 of --max-connections are open (at most --idle-timeout)")
	integer(&o.maxFacilitatorCalls, &o.facilitatorCallsSet, "max-facilitator-calls", "PREFLIGHT_MAX_FACILITATOR_CALLS",
		"most payments with the facilitator (verify through settle) at once; beyond it 503 server_busy before /verify")
	fs.StringVar(&o.metricsAddr, "metrics-addr", getenv("PREFLIGHT_METRICS_ADDR"), "serve Prometheus metrics at http://`address`/metrics on a listener of their own (env PREFLIGHT_METRICS_ADDR); empty serves none")
	return errors.Join(errs...)
}

// validate reports the first unusable value with what is expected. paid
// says whether the tool-call route charges; addr is the API's listen address.
func (o opsOptions) validate(paid bool, addr string) error {
	for _, t := range []struct {
		name string
		d    time.Duration
		max  time.Duration
	}{
		{"--read-header-timeout", o.readHeaderTimeout, maxServerTimeout},
		{"--read-timeout", o.readTimeout, maxServerTimeout},
		{"--write-timeout", o.writeTimeout, maxServerTimeout},
		{"--idle-timeout", o.idleTimeout, maxServerTimeout},
		{"--verify-timeout", o.verifyTimeout, maxFacilitatorTimeout},
		{"--settle-timeout", o.settleTimeout, maxFacilitatorTimeout},
		{"--shutdown-timeout", o.shutdownTimeout, maxServerTimeout},
		{"--idle-timeout-under-pressure", o.pressureIdleTimeout, maxServerTimeout},
	} {
		if t.d <= 0 || t.d > t.max {
			return fmt.Errorf("%s %v is out of range: want a duration above 0 and at most %v", t.name, t.d, t.max)
		}
	}
	if o.readHeaderTimeout > o.readTimeout {
		return fmt.Errorf("--read-header-timeout %v is longer than --read-timeout %v, which includes it", o.readHeaderTimeout, o.readTimeout)
	}
	if o.maxConnections < 0 {
		return fmt.Errorf("--max-connections %d is negative: want 0 (derived from the file-descriptor limit) or a bound of at least %d", o.maxConnections, minConnections)
	}
	if o.maxConnections > 0 && o.maxConnections < minConnections {
		return fmt.Errorf("--max-connections %d is below %d", o.maxConnections, minConnections)
	}
	if o.maxFacilitatorCalls < 1 || o.maxFacilitatorCalls > maxFacilitatorCallsLimit {
		return fmt.Errorf("--max-facilitator-calls %d is out of range: want 1 to %d", o.maxFacilitatorCalls, maxFacilitatorCallsLimit)
	}
	if !paid && o.facilitatorCallsSet {
		return errors.New("--max-facilitator-calls is set but --pay-to is empty; it applies only to the paid route")
	}
	if !paid && o.paymentTimeoutSet {
		return errors.New("--verify-timeout or --settle-timeout is set but --pay-to is empty; they apply only to the paid route")
	}
	if paid {
		// net/http starts the write timeout once a request's headers are
		// read: the body, a wait for an evaluation slot, verify, settle and
		// the answer itself all count against it.
		write := o.readTimeout + server.MaxEvaluationWait + o.verifyTimeout + o.settleTimeout + answerMargin
		if o.writeTimeout < write {
			return fmt.Errorf("--write-timeout %v must be at least --read-timeout + --verify-timeout + --settle-timeout + %v (%v), "+
				"or a paid answer could be cut off after its payment settled: the write timeout starts when a request's headers are read, "+
				"and the request may then wait up to %v for an evaluation slot and needs %v to answer",
				o.writeTimeout, server.MaxEvaluationWait+answerMargin, write, server.MaxEvaluationWait, answerMargin)
		}
		// Once shutdown begins no new payment is verified, so a request
		// admitted before needs at most verify, settle and its answer.
		shutdown := o.verifyTimeout + o.settleTimeout + answerMargin
		if o.shutdownTimeout < shutdown {
			return fmt.Errorf("--shutdown-timeout %v must be at least --verify-timeout + --settle-timeout + %v (%v), so a payment verified just before shutdown settles and gets its answer", o.shutdownTimeout, answerMargin, shutdown)
		}
	}
	if o.metricsAddr != "" {
		if _, _, err := net.SplitHostPort(o.metricsAddr); err != nil {
			return fmt.Errorf("--metrics-addr %q is not a host:port address such as 127.0.0.1:9090", o.metricsAddr)
		}
		// Port 0 gives each listener a free port of its own.
		if _, port, _ := net.SplitHostPort(addr); o.metricsAddr == addr && port != "0" {
			return fmt.Errorf("--metrics-addr %q is the API's own --addr; give metrics a listener of their own", o.metricsAddr)
		}
	}
	return nil
}

// connectionBound is the API listener's connection bound for a process
// whose file-descriptor limit is fdMax (0: unknown) and that is paid or
// not: --max-connections, or by default the limit less the reserve
// (fdReserve) and at most defaultMaxConnections. A bound that leaves less
// than the reserve, or a limit too low for minConnections, is an error.
func (o opsOptions) connectionBound(fdMax int, paid bool) (int, error) {
	calls := 0
	if paid {
		calls = o.maxFacilitatorCalls
	}
	reserve := fdReserve(calls)
	if fdMax == 0 { // not Linux-like: trust the flag, or the cap
		if o.maxConnections > 0 {
			return o.maxConnections, nil
		}
		return defaultMaxConnections, nil
	}
	room := fdMax - reserve
	if o.maxConnections > 0 {
		if o.maxConnections > room {
			return 0, fmt.Errorf("--max-connections %d leaves too few file descriptors: the limit (ulimit -n) is %d and %d are kept for "+
				"the process's files, the metrics listener and facilitator sockets; want at most %d, or raise the limit", o.maxConnections, fdMax, reserve, room)
		}
		return o.maxConnections, nil
	}
	if room < minConnections {
		return 0, fmt.Errorf("the file-descriptor limit (ulimit -n) %d leaves room for %d connections after the %d kept for the process's own sockets; raise it", fdMax, max(room, 0), reserve)
	}
	return min(room, defaultMaxConnections), nil
}
