package main

import (
	"strings"
	"testing"
)

// TestHelpAndBadFlag checks the command's manners: -h and --help print the
// usage and every flag to stdout and exit 0; an undefined flag, a stray
// argument, a missing -f or a bad value exits 2 with the error, the usage
// line and a pointer to -h on stderr, and nothing on stdout.
func TestHelpAndBadFlag(t *testing.T) {
	for _, help := range []string{"-h", "--help", "-help"} {
		var stdout, stderr strings.Builder
		if code := cmd([]string{help}, strings.NewReader(""), &stdout, &stderr); code != 0 || stderr.Len() > 0 {
			t.Errorf("replay %s: exit %d, stderr %q; want 0 and nothing", help, code, stderr.String())
		}
		if !strings.HasPrefix(stdout.String(), usage+"\n") {
			t.Errorf("replay %s: stdout %q, want it to start with the usage line", help, stdout.String())
		}
		for _, f := range []string{"f", "budget", "ttl", "retry-cap", "reuse", "reduce-scope", "advise", "unsupported", "operations", "v"} {
			if !strings.Contains(stdout.String(), "\n  -"+f) {
				t.Errorf("replay %s: the help does not list -%s:\n%s", help, f, stdout.String())
			}
		}
	}
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"--no-such-flag"}, "flag provided but not defined: -no-such-flag"},
		{[]string{"-f", "-", "extra"}, `unexpected arguments ["extra"]`},
		{nil, "-f is required: the recorded run, JSON Lines"},
		{[]string{"-f", "-", "-advise", "maybe"}, `-advise is "maybe"; want run or skip`},
		{[]string{"-f", "-", "-retry-cap", "0"}, "-retry-cap is 0; want 1 or more"},
	} {
		var stdout, stderr strings.Builder
		code := cmd(tc.args, strings.NewReader(""), &stdout, &stderr)
		want := "replay: " + tc.err + "\n" + usage + "\nRun 'replay -h' for the flags.\n"
		if code != 2 || stdout.Len() > 0 || stderr.String() != want {
			t.Errorf("replay %q: exit %d, stdout %q, stderr %q; want 2, nothing, %q", tc.args, code, stdout.String(), stderr.String(), want)
		}
	}
	// Any other failure exits 1 with the error alone.
	var stdout, stderr strings.Builder
	if code := cmd([]string{"-f", "testdata/nope.jsonl"}, nil, &stdout, &stderr); code != 1 || !strings.HasPrefix(stderr.String(), "replay: open testdata/nope.jsonl") || strings.Count(stderr.String(), "\n") != 1 {
		t.Errorf("replay -f testdata/nope.jsonl: exit %d, stderr %q; want 1 and one line", code, stderr.String())
	}
}
