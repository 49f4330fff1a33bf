package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
)

// TestHelpAndBadFlag: -h prints the usage and every flag and is not an
// error to exit for; a bad flag or value is a usage error (exit 2).
func TestHelpAndBadFlag(t *testing.T) {
	var out bytes.Buffer
	if _, err := parseFlags([]string{"-h"}, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v, want flag.ErrHelp", err)
	}
	for _, f := range []string{"duration", "requests", "clients", "warmup", "bin", "out", "mcp-proxy"} {
		if !strings.Contains(out.String(), "-"+f) {
			t.Errorf("-h does not list -%s:\n%s", f, out.String())
		}
	}
	for _, args := range [][]string{{"-nope"}, {"-clients", "0"}, {"-duration", "0s"}, {"extra"}} {
		var ue usageError
		if _, err := parseFlags(args, io.Discard); !errors.As(err, &ue) {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
}
