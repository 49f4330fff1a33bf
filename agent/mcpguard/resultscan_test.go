package mcpguard

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// resultCases are results of every shape: those scanResult takes and
// those it leaves to the decoders.
var resultCases = []string{
	`{"content":[{"type":"text","text":"{\"symbol\":\"S\",\"price\":101.5}"}],"structuredContent":{"symbol":"S","price":101.5}}`,
	`{"content":[]}`,
	`{}`,
	` { "content" : [ { "text" : "ok" , "type" : "text" } ] , "_meta" : { "a" : [1, 2.5, -3] } } `,
	`{"content":[{"type":"text","text":"Rate limit exceeded"}],"isError":true}`,
	`{"content":[{"type":"text","text":"upstream said 503"}],"isError":true}`,
	`{"content":[{"type":"text","text":"no such account"}],"isError":true}`,
	`{"content":[{"type":"text","text":"line\nTIMEOUT"}],"isError":true}`,
	`{"content":[{"type":"text","text":"caf\u00e9 unavailable"}],"isError":true}`,
	`{"content":[{"type":"text","text":"TEMPORARILY down ſ"}],"isError":true}`,
	`{"content":[{"type":"text","text":"x"}],"isError":false,"structuredContent":null}`,
	`{"content":[{"type":"text","text":"x"}],"isError":null}`,
	`{"content":[{"type":"text","text":"x"}],"isError":"true"}`,
	`{"content":[{"type":"text","text":"x"}],"IsError":true}`,
	`{"content":[{"type":"text","text":"x"}],"isError":false,"isError":true}`,
	`{"content":[{"type":"text","text":"x"}],"isErr\u006fr":true}`,
	`{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"}]}`,
	`{"content":[{"type":"bogus"}]}`,
	`{"content":[{"type":"text","text":5}]}`,
	`{"content":[{"type":"text","text":"x","annotations":{"priority":1}}],"isError":true}`,
	`{"content":{"type":"text","text":"x"}}`,
	`{"content":null}`,
	`{"content":[null]}`,
	`{"content":[{}]}`,
	`{"structuredContent":{"n":1e400}}`,
	`{"structuredContent":{"n":12345678901234567890}}`,
	`{"structuredContent":{"s":"\ud800"}}`,
	`{"structuredContent":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
	`{"structuredContent":{"a":1},"StructuredContent":{"a":2}}`,
	`{"_meta":5}`,
	`{"_meta":null}`,
	`{"resultType":"input_required","requestState":"abc","inputRequests":{}}`,
	`{"resultType":"complete","content":[]}`,
	`{"resultType":5}`,
	`{"ResultType":"input_required"}`,
	`{"other":{"deep":[true,false,null,"s\"q"]},"content":[]}`,
	`{"content":[]} x`,
	`{"content":[]`,
	`[]`,
	`null`,
	`"s"`,
	"{\"content\":[{\"type\":\"text\",\"text\":\"\xff\"}]}",
	``,
	`{"content":[],"requestState":{}}`, // the SDK's decoder fails on it: a transient failure
	`{"content":[],"RequestState":5}`,
}

// TestScanResult checks that a result the scan takes reads the same as
// decoded, and that the plain results a tool answers with are taken.
func TestScanResult(t *testing.T) {
	taken := 0
	for _, c := range resultCases {
		f, ok := scanResult([]byte(c))
		if !ok {
			continue
		}
		taken++
		if d := cmp.Diff(decodeResult([]byte(c)), f, cmp.AllowUnexported(resultFacts{})); d != "" {
			t.Errorf("%s: scanned facts differ from decoded (-decoded +scanned):\n%s", c, d)
		}
	}
	for _, i := range []int{0, 1, 2, 3, 4, 5, 6, 10, 32, 35} { // plain ones
		c := resultCases[i]
		if _, ok := scanResult([]byte(c)); !ok {
			t.Errorf("%s: not taken by the scan", c)
		}
	}
	if taken < 10 {
		t.Errorf("the scan took %d results, want at least 10", taken)
	}
}

// FuzzScanResult checks that whatever result the scan takes, it reads the
// same as the decoders do.
func FuzzScanResult(f *testing.F) {
	for _, c := range resultCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, ok := scanResult(b); ok {
			if d := cmp.Diff(decodeResult(b), got, cmp.AllowUnexported(resultFacts{})); d != "" {
				t.Errorf("%q: scanned facts differ from decoded (-decoded +scanned):\n%s", b, d)
			}
		}
	})
}
