// Command toolserver serves the tools of package mcptest, for the tests
// and benchmarks of the MCP guarding proxy: over stdio, or with
// -http ADDR over Streamable HTTP at /mcp (it then logs
// {"msg":"listening","addr":ADDR} on standard error, as preflightd does). With MCPTEST_COUNTS set it writes the execution counters there
// as JSON after every call.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/agentpreflight/preflight/agent/mcpguard/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	addr := flag.String("http", "", "serve Streamable HTTP at `address` instead of stdio")
	flag.Parse()
	s, _ := mcptest.NewServer(os.Getenv("MCPTEST_COUNTS"))
	if *addr == "" {
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			log.Fatal(err)
		}
		return
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "{\"msg\":\"listening\",\"addr\":%q}\n", ln.Addr().String())
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	log.Fatal(http.Serve(ln, mux))
}
