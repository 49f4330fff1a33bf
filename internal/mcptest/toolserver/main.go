// Command toolserver serves the tools of package mcptest over stdio, for
// the tests of the MCP guarding proxy. With MCPTEST_COUNTS set it
// writes the execution counters there as JSON after every call.
package main

import (
	"context"
	"log"
	"os"

	"github.com/agentpreflight/preflight/internal/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	s, _ := mcptest.NewServer(os.Getenv("MCPTEST_COUNTS"))
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
