package cli

import (
	"bytes"
	"errors"
	"flag"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestExitCode(t *testing.T) {
	c := Command{Name: "tool", Synopsis: "[-n N]", Summary: "Does a thing."}
	tests := []struct {
		name       string
		args       []string
		run        func(error) error // what the command returns after parsing
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"ok", []string{"-n", "3"}, func(err error) error { return err }, 0, "", ""},
		{"help", []string{"-h"}, func(err error) error { return err }, 0,
			"usage: tool [-n N]\n\nDoes a thing.\n\nflags:\n  -n int\n    \thow many (default 1)\n", ""},
		{"long help", []string{"--help"}, func(err error) error { return err }, 0,
			"usage: tool [-n N]\n\nDoes a thing.\n\nflags:\n  -n int\n    \thow many (default 1)\n", ""},
		{"bad flag", []string{"-x"}, func(err error) error { return err }, 2, "",
			"tool: flag provided but not defined: -x\nusage: tool [-n N]\nRun 'tool -h' for the flags.\n"},
		{"bad value", []string{"-n", "many"}, func(err error) error { return err }, 2, "",
			"tool: invalid value \"many\" for flag -n: parse error\nusage: tool [-n N]\nRun 'tool -h' for the flags.\n"},
		{"usage mistake after parsing", nil, func(error) error { return c.Usagef("-n must be odd") }, 2, "",
			"tool: -n must be odd\nusage: tool [-n N]\nRun 'tool -h' for the flags.\n"},
		{"failure", nil, func(error) error { return errors.New("disk full") }, 1, "", "tool: disk full\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("tool", flag.ContinueOnError)
			fs.Int("n", 1, "how many")
			var stdout, stderr bytes.Buffer
			err := tc.run(c.Parse(fs, tc.args, &stdout))
			code := ExitCode("tool", err, &stderr)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d", code, tc.wantCode)
			}
			if diff := cmp.Diff(tc.wantStdout, stdout.String()); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantStderr, stderr.String()); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
		})
	}
}
