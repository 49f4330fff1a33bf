package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
)

// isTerminal reports whether w is a character device such as a terminal,
// the case where a person reads the output.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// printWelcome tells a person at a terminal where the server answers. The
// JSON log lines follow for machines.
func printWelcome(w io.Writer, addr net.Addr, paid bool) {
	base := "http://" + addr.String()
	if tcp, ok := addr.(*net.TCPAddr); ok && tcp.IP.IsUnspecified() {
		// Listening on every interface: this machine reaches it as localhost.
		base = "http://localhost:" + strconv.Itoa(tcp.Port)
	}
	payment := "the tool-call route is free (no --pay-to)"
	if paid {
		payment = "the tool-call route asks for x402 payment"
	}
	fmt.Fprintf(w, "preflightd is listening on %s; %s.\n", base, payment)
	fmt.Fprintf(w, "  docs    %s/docs\n", base)
	fmt.Fprintf(w, "  health  %s/health\n", base)
	fmt.Fprintf(w, "  MCP     %s/mcp\n", base)
	fmt.Fprintln(w, "Press Ctrl-C to stop. One JSON log line per request follows.")
}
