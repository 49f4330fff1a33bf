package mcpguard

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/agentpreflight/preflight/strictjson"
)

// decodedDigest is callDigest computed by decoding the params with
// encoding/json and marshaling them back, the way the guard computed it
// before it read the params once.
func decodedDigest(params json.RawMessage, extra []byte) string {
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil {
		return ""
	}
	delete(m, "_meta")
	b, err := json.Marshal(m)
	if err != nil {
		return ""
	}
	h := sha256.New()
	h.Write(b)
	h.Write([]byte{0})
	h.Write(extra)
	return hex.EncodeToString(h.Sum(nil))
}

// decodedRetry is whether params are a retry, and their requestState, as
// encoding/json reads them.
func decodedRetry(params json.RawMessage) (bool, string) {
	var p map[string]json.RawMessage
	json.Unmarshal(params, &p)
	_, responses := p["inputResponses"]
	_, state := p["requestState"]
	var s struct {
		RequestState string `json:"requestState"`
	}
	json.Unmarshal(params, &s)
	return responses || state, s.RequestState
}

var readCallCases = []string{
	`{"name":"quote","arguments":{"symbol":"S"}}`,
	`{"arguments":{"b":[1,2.50,-0,1e3,{"z":null,"a":true}],"a":false},"name":"q","_meta":{"progressToken":1}}`,
	`{"name":"q","arguments":{"html":"<a href=\"x\">&amp;</a>","ctl":"\u0001\b\f\n\r\t\u001f\u007f","ls":"\u2028\u2029 é ſ \ud83d\ude00","slash":"\/\\"}}`,
	`{"name":"q","arguments":{"é":1,"e":2,"E":{"":[]},"😀":{},"ｚ":3}}`,
	`{"name":"q","arguments":{},"inputResponses":{"a":{"action":"accept"}},"requestState":"st\u0041te"}`,
	`{"name":"q","arguments":{},"inputResponses":{}}`,
	`{"name":"q","arguments":{},"RequestState":"x","inputResponses":{}}`,
	`{"name":"q","arguments":{},"requestState":5}`,
	`{"name":"q","arguments":{},"requestState":null}`,
	`{"name":"q","_Meta":{"x":1},"arguments":[]}`,
	`{"name":"q"}`,
}

// TestReadCallOnce checks that reading the params once gives the digest,
// retry and requestState the guard got from decoding them each time.
func TestReadCallOnce(t *testing.T) {
	for _, p := range readCallCases {
		checkReadCall(t, []byte(p), []byte("extra"))
	}
}

func checkReadCall(t *testing.T, params, extra []byte) {
	c, err := readCall(params, true)
	if err != nil {
		return
	}
	if got, want := callDigest(c.canon, extra), decodedDigest(params, extra); got != want {
		t.Errorf("%s: digest %s, decoded %s (canonical %s)", params, got, want, c.canon)
	}
	retry, state := decodedRetry(params)
	if c.retry != retry || c.state != state {
		t.Errorf("%s: retry %v state %q, decoded %v %q", params, c.retry, c.state, retry, state)
	}
}

func FuzzReadCallOnce(f *testing.F) {
	for _, p := range readCallCases {
		f.Add([]byte(p), []byte("x"))
	}
	f.Fuzz(func(t *testing.T, params, extra []byte) { checkReadCall(t, params, extra) })
}

// foldedCaseTwins is caseTwins by the folds of the names alone, for every
// object size.
func foldedCaseTwins(v strictjson.Value, at string) (string, string, string, bool) {
	switch v.Kind() {
	case strictjson.Object:
		seen := map[string]string{}
		for it := v.Iter(); it.Next(); {
			k := it.Key()
			if prev, twin := seen[foldName(k)]; twin {
				return at, prev, k, true
			}
			seen[foldName(k)] = k
			if p, a, b, ok := foldedCaseTwins(it.Value(), at+"/"+strictjson.EscapePointerToken(k)); ok {
				return p, a, b, true
			}
		}
	case strictjson.Array:
		i := 0
		for it := v.Iter(); it.Next(); i++ {
			if p, a, b, ok := foldedCaseTwins(it.Value(), at+"/"+strconv.Itoa(i)); ok {
				return p, a, b, true
			}
		}
	}
	return "", "", "", false
}

// FuzzCaseTwins checks that caseTwins, comparing the names of small
// objects pairwise, finds the twins the folds find, and the same first.
func FuzzCaseTwins(f *testing.F) {
	for _, c := range append(readCallCases,
		`{"a":{"Kelvin":1,"kelvin":2}}`, `{"x":[{"ſ":1,"S":2}]}`, `{"k":1,"\u212a":2}`, `[{"A":{"b":{"c":1,"C":2}},"a":1}]`) {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := strictjson.Parse(b, strictjson.Limits{MaxDepth: 64})
		if err != nil {
			return
		}
		at, x, y, ok := caseTwins(v, "")
		wat, wx, wy, wok := foldedCaseTwins(v, "")
		if at != wat || x != wx || y != wy || ok != wok {
			t.Errorf("%s: caseTwins %q %q %q %v, by folds %q %q %q %v", b, at, x, y, ok, wat, wx, wy, wok)
		}
	})
}
