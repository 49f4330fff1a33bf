// Package clitest checks a command's manners from its own tests by running
// the test binary as the command: TestMain calls Hook(main) first, and
// CheckManners then starts the binary with -h, --help and a bad flag.
package clitest

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

const hookEnv = "PREFLIGHT_CLITEST_MAIN"

// Hook runs main and exits when the binary was started by Run; otherwise it
// returns at once. Call it first thing in TestMain.
func Hook(main func()) {
	if os.Getenv(hookEnv) != "1" {
		return
	}
	main()
	os.Exit(0)
}

// Run starts the test binary as the command with args and returns what it
// wrote and its exit status.
func Run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), hookEnv+"=1")
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("run %v: %v", args, err)
	}
	return o.String(), e.String(), code
}

// CheckManners requires of the command name: -h and --help print a usage
// naming every flag in flags to standard output and exit 0 with nothing on
// standard error; an undefined flag exits 2 with the error, the usage line
// and a pointer to -h on standard error and nothing on standard output.
func CheckManners(t *testing.T, name string, flags ...string) {
	t.Helper()
	for _, help := range []string{"-h", "--help", "-help"} {
		stdout, stderr, code := Run(t, help)
		if code != 0 {
			t.Errorf("%s %s: exit status %d, want 0 (stderr %q)", name, help, code, stderr)
		}
		if stderr != "" {
			t.Errorf("%s %s: wrote to stderr %q, want nothing", name, help, stderr)
		}
		if !strings.HasPrefix(stdout, "usage: "+name+" ") {
			t.Errorf("%s %s: stdout %q, want it to start with %q", name, help, stdout, "usage: "+name+" ")
		}
		for _, f := range flags {
			if !strings.Contains(stdout, "\n  -"+f) {
				t.Errorf("%s %s: the help does not list -%s:\n%s", name, help, f, stdout)
			}
		}
	}
	stdout, stderr, code := Run(t, "--no-such-flag")
	if code != 2 {
		t.Errorf("%s --no-such-flag: exit status %d, want 2", name, code)
	}
	if stdout != "" {
		t.Errorf("%s --no-such-flag: wrote to stdout %q, want nothing", name, stdout)
	}
	want := name + ": flag provided but not defined: -no-such-flag\nusage: " + name + " "
	if !strings.HasPrefix(stderr, want) || !strings.HasSuffix(stderr, "Run '"+name+" -h' for the flags.\n") {
		t.Errorf("%s --no-such-flag: stderr %q, want the error, the usage line and a pointer to -h", name, stderr)
	}
	if n := strings.Count(stderr, "\n"); n != 3 {
		t.Errorf("%s --no-such-flag: stderr has %d lines, want 3 (error, usage line, hint):\n%s", name, n, stderr)
	}
}
