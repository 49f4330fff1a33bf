// Scenarios for the interop test: the official x402 fetch client
// (@x402/fetch with @x402/evm's exact scheme and a viem local account) pays
// preflight's decision route, whose paywall talks to facilitator.mjs.
//
// Environment: SERVER_URL (preflight base URL), FACILITATOR_URL, PAY_TO,
// PAYER_KEY (the fixed test private key). Run with: node --test client.mjs
import assert from "node:assert/strict";
import { test } from "node:test";
import { privateKeyToAccount } from "viem/accounts";
import { wrapFetchWithPayment, x402Client, decodePaymentResponseHeader } from "@x402/fetch";
import { registerExactEvmScheme } from "@x402/evm/exact/client";

const { SERVER_URL, FACILITATOR_URL, PAY_TO, PAYER_KEY } = process.env;
for (const [k, v] of Object.entries({ SERVER_URL, FACILITATOR_URL, PAY_TO, PAYER_KEY })) {
  if (!v) throw new Error(`${k} is not set`);
}
const ROUTE = `${SERVER_URL}/v0.2/preflight/tool-call`;
const account = privateKeyToAccount(PAYER_KEY);

// Every request the paying client sends is recorded, so a scenario can look
// at the PAYMENT-SIGNATURE it produced.
const sent = [];
const recordingFetch = (input, init) => {
  const req = new Request(input, init);
  sent.push(req.headers.get("payment-signature"));
  return fetch(req);
};
const client = registerExactEvmScheme(new x402Client(), { signer: account });
const payingFetch = wrapFetchWithPayment(recordingFetch, client);

const decision = JSON.stringify({
  runId: "interop-run",
  stepId: "step-1",
  tool: {
    provider: "search",
    operation: "web_search",
    request: { query: "x402 interop", max_results: 3 },
    estimatedExternalCostUsd: 0.005,
  },
  budget: { remainingUsd: 1 },
});
const post = (f, body, extra = {}) =>
  f(ROUTE, { method: "POST", headers: { "Content-Type": "application/json", Accept: "application/json", ...extra }, body });

async function stats() {
  const r = await fetch(`${FACILITATOR_URL}/__stub/stats`);
  return r.json();
}
async function settleMode(mode) {
  const r = await fetch(`${FACILITATOR_URL}/__stub/settle-mode`, { method: "POST", body: JSON.stringify({ mode }) });
  assert.equal(r.status, 200);
}
const decodeHeader = (h) => JSON.parse(Buffer.from(h, "base64").toString("utf8"));

test("the unpaid challenge offers $0.002 USDC on Base", async () => {
  const r = await post(fetch, decision);
  assert.equal(r.status, 402);
  const challenge = decodeHeader(r.headers.get("payment-required"));
  assert.equal(challenge.x402Version, 2);
  assert.equal(challenge.resource.url, ROUTE);
  assert.deepEqual(challenge.accepts, [
    {
      scheme: "exact",
      network: "eip155:8453",
      amount: "2000",
      asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
      payTo: PAY_TO,
      maxTimeoutSeconds: 60,
      extra: { name: "USD Coin", version: "2" },
    },
  ]);
  assert.equal((await r.json()).error.code, "payment_required");
});

let paidSignature;

test("a paid decision gets 200 and a settled PAYMENT-RESPONSE", async () => {
  const before = await stats();
  sent.length = 0;
  const r = await post(payingFetch, decision);
  const body = await r.json();
  assert.equal(r.status, 200, JSON.stringify(body));
  assert.ok(["allow", "block", "reuse", "defer", "advise"].includes(body.decision), JSON.stringify(body));
  const receipt = decodePaymentResponseHeader(r.headers.get("payment-response"));
  assert.equal(receipt.success, true);
  assert.equal(receipt.network, "eip155:8453");
  assert.match(receipt.transaction, /^0x[0-9a-f]{64}$/);
  assert.equal(receipt.payer.toLowerCase(), account.address.toLowerCase());
  const after = await stats();
  assert.equal(after.verify - before.verify, 1);
  assert.equal(after.settle - before.settle, 1);
  assert.equal(BigInt(after.balances.payTo) - BigInt(before.balances.payTo), 2000n, "the recipient got exactly 2000 atomic units");
  assert.equal(sent.length, 2, "one unpaid try and one paid retry");
  paidSignature = sent[1];
  assert.ok(paidSignature);
});

test("replaying a settled payment is refused and not settled again", async () => {
  assert.ok(paidSignature, "needs the paid scenario");
  const before = await stats();
  const r = await post(fetch, decision, { "PAYMENT-SIGNATURE": paidSignature });
  const body = await r.json();
  assert.equal(r.status, 402, JSON.stringify(body));
  assert.equal(body.error.code, "payment_required");
  assert.equal(body.decision, undefined);
  assert.equal(decodeHeader(r.headers.get("payment-required")).error, "invalid_exact_evm_nonce_already_used");
  const after = await stats();
  assert.equal(after.settle, before.settle);
  assert.equal(after.balances.payTo, before.balances.payTo);
});

test("an invalid body is never charged", async () => {
  const before = await stats();
  sent.length = 0;
  const r = await post(payingFetch, JSON.stringify({ runId: "", stepId: "s" }));
  const body = await r.json();
  assert.equal(r.status, 400, JSON.stringify(body));
  assert.equal(r.headers.get("payment-response"), null);
  assert.equal(r.headers.get("payment-required"), null);
  assert.equal(sent.length, 1, "the client never signed");
  const after = await stats();
  assert.deepEqual([after.verify, after.settle], [before.verify, before.settle]);
  assert.equal(after.balances.payer, before.balances.payer);
});

test("a failed settlement leaks no decision", async () => {
  await settleMode("revert");
  try {
    const before = await stats();
    const r = await post(payingFetch, decision);
    const body = await r.json();
    assert.equal(r.status, 402, JSON.stringify(body));
    assert.equal(body.decision, undefined, "no decision in the body");
    assert.equal(body.error.code, "payment_required");
    const receipt = decodePaymentResponseHeader(r.headers.get("payment-response"));
    assert.equal(receipt.success, false);
    assert.equal(receipt.errorReason, "invalid_exact_evm_transaction_failed");
    assert.equal(receipt.transaction, "");
    const after = await stats();
    assert.equal(after.settle - before.settle, 1);
    assert.equal(after.balances.payTo, before.balances.payTo, "nothing moved");
  } finally {
    await settleMode("ok");
  }
});
