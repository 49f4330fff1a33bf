package receipt_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/receipt"
)

// A server signs the decision it sends; an auditor, holding the request,
// the decision and the receipt, checks the signature and recomputes the
// decision. Then someone edits the decision.
func Example() {
	seed := sha256.Sum256([]byte("an example key; load yours with ParseSigningKey"))
	signer, _ := receipt.NewSigner(ed25519.NewKeyFromSeed(seed[:]))

	request := []byte(`{"runId":"r1","stepId":"s1","tool":{"provider":"search","operation":"web_search",` +
		`"request":{"query":"ed25519"},"estimatedExternalCostUsd":0.01},"budget":{"remainingUsd":0.005}}`)
	dec, _ := preflight.DecideJSON(request)
	response, _ := json.Marshal(dec)
	rc, _ := signer.Sign(response, "")
	wire := rc.Marshal() // the Preflight-Receipt header

	// The auditor's side: no server, no network.
	got, _ := receipt.Parse(wire)
	keys, _ := receipt.ParseKeys(signer.KeysDocument())
	v, _ := receipt.Verify(request, response, got, keys, nil)
	fmt.Println(dec.Verdict, "verified:", v.OK())

	edited := bytes.Replace(response, []byte(`"defer"`), []byte(`"allow"`), 1)
	v, _ = receipt.Verify(request, edited, got, keys, nil)
	for _, f := range v.Findings {
		fmt.Println(strings.TrimSpace(fmt.Sprint(f.Code, " ", f.Path, " ", f.Want, " ", f.Got)))
	}
	// Output:
	// defer verified: true
	// signature /receipt/sig
	// response /response/decision "defer" "allow"
}
