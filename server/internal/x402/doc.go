// Package x402 puts one HTTP route behind an x402 version 2 paywall: the
// "exact" scheme, USDC on Base, a fixed $0.002 (amount "2000") per settled
// request.
//
// A [Paywall] is built once from a [Config] by [New] and then used by the
// route's handler through [Paywall.Handle]. The flow, for a request whose
// body the caller has already decoded and validated:
//
//  1. No PAYMENT-SIGNATURE header: 402 with the challenge in PAYMENT-REQUIRED.
//  2. A header that is not padded standard base64 of a JSON PaymentPayload
//     object with x402Version 2, an "accepted" object and a "payload" object:
//     400 invalid_request (the x402 HTTP transport's answer to a malformed
//     payment payload; no challenge, nothing is sent to the facilitator).
//  3. The payload's "accepted" differs from the offer in scheme, network,
//     amount, asset or payTo (payTo compared case-insensitively): 402 with a
//     fresh challenge.
//  4. Config.MaxFacilitatorCalls payments (32 by default) are already
//     with the facilitator: 503 server_busy with Retry-After, nothing is
//     sent. Otherwise the payment takes a place, kept until step 7 ends.
//  5. POST /verify to the facilitator with the payload and the paywall's OWN
//     requirements. isValid false, whatever the HTTP status: 402 with a fresh
//     challenge. No decodable answer: 503 payment_unavailable.
//  6. The caller's produce function runs. A status other than 200 is sent as
//     it is and never settled.
//  7. POST /settle. success true: the 200 body plus PAYMENT-RESPONSE.
//     success false: 402 with PAYMENT-RESPONSE (success false) and a fresh
//     challenge, and the produced body is dropped. success false with
//     errorReason "settlement_pending" (broadcast, unconfirmed), or no
//     decodable answer: 503 payment_unavailable (with the facilitator's
//     PAYMENT-RESPONSE when there is one), and the produced body is dropped.
//
// Settlement does not depend on the client staying: once /settle is sent the
// transfer may land on chain, so the call runs on a context the client's
// disconnect does not cancel (context.WithoutCancel), bounded by
// Config.SettleTimeout. Its outcome is always logged (msg "x402 settled",
// "x402 settlement refused", "x402 settlement pending, outcome unknown" or
// "x402 settle failed, outcome unknown") with the transaction, payer,
// network, whether the client had gone, the facilitator's full reason and
// message, and the request id when the server's logger takes it from the
// context. A client that stayed gets the receipt in PAYMENT-RESPONSE.
//
// PAYMENT-RESPONSE is built from facilitator data, so its value is clipped
// to [MaxResponseHeaderBytes] (4,096 bytes) for every outcome; the log line
// carries what was clipped.
//
// Every error body is the service's error envelope ([preflight.Error]) with
// code payment_required (402), invalid_request (400), payment_unavailable
// (503) or server_busy (503).
//
// # What it never does
//
// It never retries or replays a payment: each PAYMENT-SIGNATURE is sent to
// /verify at most once and to /settle at most once per request, and a payment
// already in flight in another request of the same Paywall is refused (402
// payment_already_in_progress). A payment is recognised by what it pays,
// not by its header's bytes: its network, asset, payer and nonce, the
// last two as the values the chain compares, however the header spells its
// JSON (see paymentKey). The header is read as a facilitator will read it,
// and whatever one might read differently is refused as malformed (400
// invalid_request, before any facilitator call) with a detail that points
// at the member: duplicate member names, invalid UTF-8, a member name that
// differs only in letter case from one the protocol or the exact scheme
// defines, at every level of payload ([IssueMemberCase]), both
// authorization and permit2Authorization ([IssueAuthorizationConflict]),
// and a payer or nonce not in the scheme's one form. It
// never settles a response other than a 200, never returns the produced body
// unless settlement succeeded, never logs header values, signatures or
// payloads, and never sets CORS headers (a browser client that needs
// Access-Control-Expose-Headers gets it from the server's CORS layer; the
// x402 specification does not require it).
//
// A misconfigured Paywall cannot be built: [New] returns the [Config.Validate]
// error, and the reference server answers the paid route with 503
// payment_unavailable in that case.
package x402
