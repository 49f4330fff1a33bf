package main

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const testPayTo = "0x1111111111111111111111111111111111111111"

var paidArgs = []string{"--pay-to", testPayTo, "--facilitator-url", "https://x402.example/facilitator"}

func TestOpsFlags(t *testing.T) {
	withOps := func(f func(*opsOptions)) opsOptions {
		o := defaultOps()
		f(&o)
		return o
	}
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want opsOptions
	}{
		{"defaults are the historical constants", nil, nil, opsOptions{
			readHeaderTimeout: 5 * time.Second, readTimeout: 30 * time.Second, writeTimeout: 60 * time.Second,
			idleTimeout: 120 * time.Second, verifyTimeout: 10 * time.Second, settleTimeout: 15 * time.Second,
			shutdownTimeout: 30 * time.Second, pressureIdleTimeout: 5 * time.Second, maxFacilitatorCalls: 32,
		}},
		{"bounds", append([]string{"--max-connections=500", "--idle-timeout-under-pressure=2s", "--max-facilitator-calls", "8"}, paidArgs...), nil,
			withOps(func(o *opsOptions) {
				o.maxConnections, o.pressureIdleTimeout, o.maxFacilitatorCalls, o.facilitatorCallsSet = 500, 2*time.Second, 8, true
			})},
		{"bounds from the environment", nil, map[string]string{"PREFLIGHT_MAX_CONNECTIONS": "64", "PREFLIGHT_IDLE_TIMEOUT_UNDER_PRESSURE": "1s"},
			withOps(func(o *opsOptions) { o.maxConnections, o.pressureIdleTimeout = 64, time.Second })},
		{"flags", []string{"--read-header-timeout=2s", "--read-timeout", "10s", "--write-timeout=90s", "--idle-timeout=1m",
			"--shutdown-timeout=45s", "--metrics-addr", "127.0.0.1:9464"}, nil, withOps(func(o *opsOptions) {
			o.readHeaderTimeout, o.readTimeout, o.writeTimeout, o.idleTimeout = 2*time.Second, 10*time.Second, 90*time.Second, time.Minute
			o.shutdownTimeout, o.metricsAddr = 45*time.Second, "127.0.0.1:9464"
		})},
		{"environment", nil, map[string]string{"PREFLIGHT_WRITE_TIMEOUT": "75s", "PREFLIGHT_METRICS_ADDR": ":9464", "PREFLIGHT_IDLE_TIMEOUT": "500ms"},
			withOps(func(o *opsOptions) {
				o.writeTimeout, o.metricsAddr, o.idleTimeout = 75*time.Second, ":9464", 500*time.Millisecond
			})},
		{"flag wins over environment", []string{"--shutdown-timeout", "40s"}, map[string]string{"PREFLIGHT_SHUTDOWN_TIMEOUT": "50s"},
			withOps(func(o *opsOptions) { o.shutdownTimeout = 40 * time.Second })},
		{"paid timeouts at the boundary", append([]string{"--write-timeout=59s", "--shutdown-timeout=27s"}, paidArgs...), nil,
			withOps(func(o *opsOptions) { o.writeTimeout, o.shutdownTimeout = 59*time.Second, 27*time.Second })},
		{"short facilitator timeouts allow short grace", append([]string{"--read-timeout=5s", "--verify-timeout=1s", "--settle-timeout=1s",
			"--write-timeout=11s", "--shutdown-timeout=4s"}, paidArgs...), nil,
			withOps(func(o *opsOptions) {
				o.readTimeout, o.verifyTimeout, o.settleTimeout = 5*time.Second, time.Second, time.Second
				o.writeTimeout, o.shutdownTimeout, o.paymentTimeoutSet = 11*time.Second, 4*time.Second, true
			})},
		{"metrics and API both on port 0", []string{"--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0"}, nil,
			withOps(func(o *opsOptions) { o.metricsAddr = "127.0.0.1:0" })},
		{"payment timeouts", append([]string{"--verify-timeout=3s", "--settle-timeout=4s"}, paidArgs...), nil,
			withOps(func(o *opsOptions) {
				o.verifyTimeout, o.settleTimeout, o.paymentTimeoutSet = 3*time.Second, 4*time.Second, true
			})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseFlags(tc.args, func(k string) string { return tc.env[k] }, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := o.serverConfig()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, o.ops, cmp.AllowUnexported(opsOptions{})); diff != "" {
				t.Errorf("ops (-want +got):\n%s", diff)
			}
			if cfg.Payment != nil && cfg.Payment.MaxFacilitatorCalls != o.ops.maxFacilitatorCalls {
				t.Errorf("payment MaxFacilitatorCalls %d, want %d", cfg.Payment.MaxFacilitatorCalls, o.ops.maxFacilitatorCalls)
			}
			if cfg.Payment != nil && (cfg.Payment.VerifyTimeout != o.ops.verifyTimeout || cfg.Payment.SettleTimeout != o.ops.settleTimeout) {
				t.Errorf("payment timeouts %v/%v, want %v/%v", cfg.Payment.VerifyTimeout, cfg.Payment.SettleTimeout, o.ops.verifyTimeout, o.ops.settleTimeout)
			}
		})
	}
}

func TestOpsFlagErrors(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
	}{
		{"not a duration", []string{"--write-timeout", "60"}, nil, `"60" is not a duration such as 500ms, 30s or 2m`},
		{"env not a duration", nil, map[string]string{"PREFLIGHT_READ_TIMEOUT": "soon"}, `PREFLIGHT_READ_TIMEOUT="soon" is not a duration`},
		{"zero", []string{"--idle-timeout=0s"}, nil, "--idle-timeout 0s is out of range: want a duration above 0 and at most 1h0m0s"},
		{"negative", []string{"--read-header-timeout=-1s"}, nil, "--read-header-timeout -1s is out of range"},
		{"too long", []string{"--shutdown-timeout=2h"}, nil, "--shutdown-timeout 2h0m0s is out of range"},
		{"facilitator timeout over its client's limit", append([]string{"--settle-timeout=30s", "--write-timeout=2m", "--shutdown-timeout=1m"}, paidArgs...), nil,
			"--settle-timeout 30s is out of range: want a duration above 0 and at most 20s"},
		{"header timeout over read timeout", []string{"--read-header-timeout=40s"}, nil, "--read-header-timeout 40s is longer than --read-timeout 30s"},
		// Paid: the write timeout runs from the headers, so it must cover
		// read (30s) + slot wait (2s) + verify (10s) + settle (15s) + 2s.
		{"write timeout shorter than payment", append([]string{"--write-timeout=20s"}, paidArgs...), nil,
			"--write-timeout 20s must be at least --read-timeout + --verify-timeout + --settle-timeout + 4s (59s)"},
		{"write timeout just under the boundary", append([]string{"--write-timeout=58999ms"}, paidArgs...), nil,
			"--write-timeout 58.999s must be at least"},
		{"write timeout not covering a slow body", append([]string{"--read-timeout=20s", "--write-timeout=26s"}, paidArgs...), nil,
			"--write-timeout 26s must be at least --read-timeout + --verify-timeout + --settle-timeout + 4s (49s)"},
		{"unpaid write timeout may be short", []string{"--write-timeout=20s", "--metrics-addr", "nonsense"}, nil, `--metrics-addr "nonsense" is not a host:port`},
		{"shutdown shorter than payment", append([]string{"--shutdown-timeout=10s"}, paidArgs...), nil,
			"--shutdown-timeout 10s must be at least --verify-timeout + --settle-timeout + 2s (27s)"},
		{"shutdown just under the boundary", append([]string{"--shutdown-timeout=26999ms"}, paidArgs...), nil,
			"--shutdown-timeout 26.999s must be at least"},
		{"payment timeout without pay-to", []string{"--verify-timeout=5s"}, nil, "--verify-timeout or --settle-timeout is set but --pay-to is empty"},
		{"payment timeout env without pay-to", nil, map[string]string{"PREFLIGHT_SETTLE_TIMEOUT": "5s"}, "--pay-to is empty"},
		{"metrics on the API address", []string{"--addr", "127.0.0.1:8080", "--metrics-addr", "127.0.0.1:8080"}, nil, "is the API's own --addr"},
		{"connections negative", []string{"--max-connections=-1"}, nil, "--max-connections -1 is negative"},
		{"connections too few", []string{"--max-connections=3"}, nil, "--max-connections 3 is below 16"},
		{"connections not an integer", nil, map[string]string{"PREFLIGHT_MAX_CONNECTIONS": "many"}, `PREFLIGHT_MAX_CONNECTIONS="many" is not an integer`},
		{"pressure idle zero", []string{"--idle-timeout-under-pressure=0s"}, nil, "--idle-timeout-under-pressure 0s is out of range"},
		{"facilitator calls zero", append([]string{"--max-facilitator-calls=0"}, paidArgs...), nil, "--max-facilitator-calls 0 is out of range: want 1 to 4096"},
		{"facilitator calls without pay-to", []string{"--max-facilitator-calls=8"}, nil, "--max-facilitator-calls is set but --pay-to is empty"},
		{"authorization window too short for the timeouts", append([]string{"--max-timeout-seconds=30"}, paidArgs...), nil, "MaxTimeoutSeconds 30 is too short"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseFlags(tc.args, func(k string) string { return tc.env[k] }, io.Discard)
			if err == nil {
				_, err = o.serverConfig()
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestConnectionBound: the default bound is the file-descriptor limit less
// the reserve (64 + 32 for metrics + the facilitator calls and their idle
// pool when paid), capped at 4,096; an explicit bound must fit under the
// limit too.
func TestConnectionBound(t *testing.T) {
	tests := []struct {
		name    string
		max     int
		fdMax   int
		paid    bool
		want    int
		wantErr string
	}{
		{"large limit: the cap", 0, 1 << 20, true, 4096, ""},
		{"unpaid 1024", 0, 1024, false, 1024 - 104, ""},
		{"paid 1024", 0, 1024, true, 1024 - 136, ""},
		{"unknown limit", 0, 0, true, 4096, ""},
		{"explicit within", 5000, 20000, true, 5000, ""},
		{"explicit above the cap", 15000, 20000, true, 15000, ""},
		{"explicit over the limit", 20000, 20000, true, 0, "--max-connections 20000 leaves too few file descriptors: the limit (ulimit -n) is 20000 and 136 are kept"},
		{"limit too low", 0, 110, false, 0, "the file-descriptor limit (ulimit -n) 110 leaves room for 6 connections"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := defaultOps()
			o.maxConnections = tc.max
			got, err := o.connectionBound(tc.fdMax, tc.paid)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("bound %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}
