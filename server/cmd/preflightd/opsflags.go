package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"time"

	"github.com/agentpreflight/preflight/server"
	"github.com/agentpreflight/preflight/server/internal/x402"
)

// opsOptions are the operator's knobs: timeouts and the metrics listener.
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
}

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
	}
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
	} {
		if t.d <= 0 || t.d > t.max {
			return fmt.Errorf("%s %v is out of range: want a duration above 0 and at most %v", t.name, t.d, t.max)
		}
	}
	if o.readHeaderTimeout > o.readTimeout {
		return fmt.Errorf("--read-header-timeout %v is longer than --read-timeout %v, which includes it", o.readHeaderTimeout, o.readTimeout)
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
