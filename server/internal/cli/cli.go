// Package cli gives the repository's commands the same manners: -h and
// --help print the usage to standard output and exit 0; a bad flag or
// argument prints the error and the usage line to standard error and exits
// 2; any other failure exits 1.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// Command describes a command for its usage text.
type Command struct {
	Name     string // "preflightd"
	Synopsis string // what follows the name on the usage line: "[flags]"
	Summary  string // one or more sentences printed under the usage line by -h
}

// UsageLine is "usage: NAME SYNOPSIS".
func (c Command) UsageLine() string {
	return "usage: " + c.Name + " " + c.Synopsis
}

// UsageError is a mistake on the command line; the command exits 2.
type UsageError struct {
	Err   error
	Usage string // the usage line
	Help  string // the command whose -h lists the flags; empty means the program's name
}

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef returns a *UsageError for c with a formatted message.
func (c Command) Usagef(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...), Usage: c.UsageLine()}
}

// Parse parses args into fs, which must use flag.ContinueOnError. On -h or
// --help it writes the full usage to stdout and returns flag.ErrHelp; a bad
// flag comes back as a *UsageError. fs prints nothing itself.
func (c Command) Parse(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		c.PrintHelp(fs, stdout)
		return flag.ErrHelp
	default:
		return &UsageError{Err: err, Usage: c.UsageLine()}
	}
}

// PrintHelp writes the usage line, the summary and every flag to w.
func (c Command) PrintHelp(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprintln(w, c.UsageLine())
	if c.Summary != "" {
		fmt.Fprintf(w, "\n%s\n", c.Summary)
	}
	fmt.Fprintln(w, "\nflags:")
	out := fs.Output()
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(out)
}

// ExitCode reports err on stderr as name's error and returns the status to
// exit with: 0 for nil and flag.ErrHelp (the help is already printed), 2 for
// a *UsageError (followed by its usage line and a pointer to -h), 1 for
// anything else.
func ExitCode(name string, err error, stderr io.Writer) int {
	var ue *UsageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		help := ue.Help
		if help == "" {
			help = name
		}
		fmt.Fprintf(stderr, "%s: %v\n%s\nRun '%s -h' for the flags.\n", name, ue.Err, ue.Usage, help)
		return 2
	default:
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
}

// Exit ends the process as ExitCode says, writing to os.Stderr.
func Exit(name string, err error) {
	os.Exit(ExitCode(name, err, os.Stderr))
}
