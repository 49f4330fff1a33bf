# curl examples for the README. This file is the single source: the test
# TestBinaryEndToEnd (server/cmd/preflightd) runs every example below exactly
# as written against a freshly started preflightd and compares the output
# with curl-examples.golden. Examples are separated by blank lines; each
# starts with a "# " comment that names it.
BASE=${BASE:-http://127.0.0.1:8080}

# Liveness
curl -sS "$BASE/health"

# Validate a request body against a JSON Schema (free)
curl -sS -X POST "$BASE/check-request" \
  -H 'Content-Type: application/json' \
  -d '{
    "request": {
      "method": "POST",
      "url": "https://api.example.com/v1/orders",
      "body": {"sku": "A-1", "qty": 0}
    },
    "schema": {
      "type": "object",
      "required": ["sku", "qty"],
      "properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}}
    }
  }'

# Ask whether a web search is worth making (paid with x402 when the server has a recipient)
curl -sS -X POST "$BASE/v0.2/preflight/tool-call" \
  -H 'Content-Type: application/json' -H 'Accept: application/json' \
  -d '{
    "runId": "run-1",
    "stepId": "step-1",
    "tool": {
      "provider": "search",
      "operation": "web_search",
      "request": {"query": "x402 payment protocol", "max_results": 5},
      "estimatedExternalCostUsd": 0.01
    },
    "budget": {"remainingUsd": 0.5}
  }'

# An input error is a 400 with the error envelope (and never charged)
curl -sS -w '\nHTTP %{http_code}\n' -X POST "$BASE/v0.2/preflight/tool-call" \
  -H 'Content-Type: application/json' \
  -d '{"runId": "run-1"}'

# The same check through MCP (stateless Streamable HTTP: no initialize needed for one call)
curl -sS -X POST "$BASE/mcp" \
  -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
  -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"check_request","arguments":{"request":{"method":"POST","url":"https://api.example.com/v1/orders","body":{"sku":"A-1","qty":2}},"schema":{"type":"object","required":["sku"]}}}}'

# The OpenAPI document, the guides and the discovery documents
for path in /openapi.json /docs /docs/index.md /index.md /llms.txt /llms-full.txt \
  /.well-known/api-catalog /.well-known/agent-skills/index.json; do
  curl -sS -o /dev/null -w "$path %{http_code} %{content_type}\n" "$BASE$path"
done

# The reserved usage export always fails closed, before reading any input
curl -sS -w '\nHTTP %{http_code}\n' -X POST "$BASE/v0.2/usage/dump"
