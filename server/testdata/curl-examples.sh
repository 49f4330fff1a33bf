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
