// An x402 facilitator for the interop test, listening on 127.0.0.1 only.
//
// /verify, /settle and /supported are served by the official facilitator
// code: x402Facilitator from @x402/core with ExactEvmScheme from @x402/evm.
// Its chain access is STUBBED (see stub-chain.mjs); nothing here talks to a
// network but loopback.
//
// Test-only controls, under /__stub/ (not part of x402):
//   GET  /__stub/stats          {"verify":n,"settle":n,"balances":{...}}
//   POST /__stub/settle-mode    body {"mode":"ok"|"revert"}
//
// Prints "listening http://127.0.0.1:PORT" on stdout once ready.
import http from "node:http";
import { x402Facilitator } from "@x402/core/facilitator";
import { ExactEvmScheme } from "@x402/evm/exact/facilitator";
import { createStubChain } from "./stub-chain.mjs";

const NETWORK = "eip155:8453";
const USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const payer = process.env.PAYER_ADDRESS;
const payTo = process.env.PAY_TO;
if (!payer || !payTo) {
  console.error("facilitator.mjs: PAYER_ADDRESS and PAY_TO must be set");
  process.exit(2);
}

const chain = createStubChain({
  chainId: 8453,
  asset: USDC,
  name: "USD Coin",
  version: "2",
  facilitator: "0x000000000000000000000000000000000000fAC1",
  balances: { [payer]: "1000000" }, // 1 USDC
});
const facilitator = new x402Facilitator().register(NETWORK, new ExactEvmScheme(chain.signer));
const counts = { verify: 0, settle: 0 };

function send(res, status, value) {
  const body = JSON.stringify(value, (_, v) => (typeof v === "bigint" ? v.toString() : v));
  res.writeHead(status, { "Content-Type": "application/json" });
  res.end(body);
}

async function readJSON(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  return JSON.parse(Buffer.concat(chunks).toString("utf8"));
}

const server = http.createServer(async (req, res) => {
  try {
    if (req.method === "GET" && req.url === "/supported") return send(res, 200, facilitator.getSupported());
    if (req.method === "GET" && req.url === "/__stub/stats") {
      return send(res, 200, { ...counts, balances: { payer: chain.balance(payer), payTo: chain.balance(payTo) } });
    }
    if (req.method === "POST" && req.url === "/__stub/settle-mode") {
      chain.setSettleMode((await readJSON(req)).mode);
      return send(res, 200, {});
    }
    if (req.method === "POST" && (req.url === "/verify" || req.url === "/settle")) {
      const { paymentPayload, paymentRequirements } = await readJSON(req);
      if (req.url === "/verify") {
        counts.verify++;
        return send(res, 200, await facilitator.verify(paymentPayload, paymentRequirements));
      }
      counts.settle++;
      return send(res, 200, await facilitator.settle(paymentPayload, paymentRequirements));
    }
    send(res, 404, { error: "not found" });
  } catch (err) {
    // Like the TS example facilitator: exceptions become 500 {"error": ...}.
    send(res, 500, { error: err instanceof Error ? err.message : String(err) });
  }
});

server.listen(0, "127.0.0.1", () => {
  console.log(`listening http://127.0.0.1:${server.address().port}`);
});
for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => server.close(() => process.exit(0)));
