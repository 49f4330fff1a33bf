package main

import (
	"strings"
	"testing"
)

// TestHelpAndBadFlag checks the command's manners: -h and --help print the
// usage and every flag to stdout and exit 0; an undefined flag or a stray
// argument exits 2 with the error, the usage line and a pointer to -h on
// stderr, and nothing on stdout.
func TestHelpAndBadFlag(t *testing.T) {
	for _, help := range []string{"-h", "--help", "-help"} {
		var stdout, stderr strings.Builder
		if code := cmd([]string{help}, &stdout, &stderr); code != 0 || stderr.Len() > 0 {
			t.Errorf("mcpclient %s: exit %d, stderr %q; want 0 and nothing", help, code, stderr.String())
		}
		if !strings.HasPrefix(stdout.String(), usage+"\n") {
			t.Errorf("mcpclient %s: stdout %q, want it to start with the usage line", help, stdout.String())
		}
		for _, f := range []string{"url", "protocol", "timeout"} {
			if !strings.Contains(stdout.String(), "\n  -"+f) {
				t.Errorf("mcpclient %s: the help does not list -%s:\n%s", help, f, stdout.String())
			}
		}
	}
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"--no-such-flag"}, "flag provided but not defined: -no-such-flag"},
		{[]string{"extra"}, `unexpected arguments ["extra"]`},
	} {
		var stdout, stderr strings.Builder
		code := cmd(tc.args, &stdout, &stderr)
		want := "mcpclient: " + tc.err + "\n" + usage + "\nRun 'mcpclient -h' for the flags.\n"
		if code != 2 || stdout.Len() > 0 || stderr.String() != want {
			t.Errorf("mcpclient %q: exit %d, stdout %q, stderr %q; want 2, nothing, %q", tc.args, code, stdout.String(), stderr.String(), want)
		}
	}
}
