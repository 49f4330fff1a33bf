// Command floorserver is the floor of the server comparison as a process
// of its own: a bare net/http server whose only handler is
// load.BareHandler (read the body under the 64 KiB limit, unmarshal it
// with encoding/json, write a fixed 300-byte answer). It listens on
// loopback only and logs one JSON line, {"msg":"listening","addr":...},
// to standard error, as preflightd does, so one harness starts both.
//
//	go run ./cmd/floorserver -addr 127.0.0.1:0
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/agentpreflight/preflight/benchmarks/load"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "loopback listen address; port 0 picks a free port")
	flag.Parse()
	host, _, err := net.SplitHostPort(*addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		fmt.Fprintf(os.Stderr, "floorserver: -addr %q is not a loopback IP address and port\n", *addr)
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "floorserver:", err)
		os.Exit(1)
	}
	line, _ := json.Marshal(map[string]string{"msg": "listening", "addr": ln.Addr().String()})
	fmt.Fprintf(os.Stderr, "%s\n", line)
	srv := &http.Server{Handler: load.BareHandler(), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintln(os.Stderr, "floorserver:", srv.Serve(ln))
	os.Exit(1)
}
