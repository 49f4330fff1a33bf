package preflight

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"testing"
)

var hex64 = regexp.MustCompile(`^[a-f0-9]{64}$`)

// checkEnvelope asserts that err is an *Error with a code and a message and
// that it marshals to the error envelope.
func checkEnvelope(t *testing.T, err error) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *Error", err, err)
	}
	if e.Code == "" || e.Message == "" {
		t.Fatalf("error without code or message: %#v", e)
	}
	out, merr := json.Marshal(e)
	if merr != nil || !json.Valid(out) {
		t.Fatalf("envelope does not marshal: %v", merr)
	}
}

// FuzzCheck feeds arbitrary bytes to DecodeCheckRequest and Check: they
// never panic, answer the same bytes twice, and always give either an
// *Error or a result of the response shape.
func FuzzCheck(f *testing.F) {
	addSeeds(f, "testdata/check/*.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		first, err := checkBytes(data)
		if err != nil {
			checkEnvelope(t, err)
			_, err2 := checkBytes(data)
			if err2 == nil || err2.Error() != err.Error() {
				t.Fatalf("same input, different errors: %v / %v", err, err2)
			}
			return
		}
		if first.Errors == nil || first.Warnings == nil || !hex64.MatchString(first.RequestHash) {
			t.Fatalf("result breaks the response shape: %+v", first)
		}
		if first.Valid != (len(first.Errors) == 0) {
			t.Fatalf("valid=%v with %d errors", first.Valid, len(first.Errors))
		}
		a, _ := json.Marshal(first)
		second, err := checkBytes(data)
		if err != nil {
			t.Fatalf("second run failed: %v", err)
		}
		if b, _ := json.Marshal(second); !bytes.Equal(a, b) {
			t.Fatalf("same input, different output:\n%s\n%s", a, b)
		}
	})
}

// FuzzDecide is FuzzCheck for DecodeToolCallRequest and Decide.
func FuzzDecide(f *testing.F) {
	addSeeds(f, "testdata/decide/*.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		first, err := decideBytes(data)
		if err != nil {
			checkEnvelope(t, err)
			return
		}
		if first.Issues == nil || len(first.ReasonCodes) == 0 || !hex64.MatchString(first.RequestFingerprint) {
			t.Fatalf("decision breaks the response shape: %+v", first)
		}
		switch first.Verdict {
		case VerdictAllow, VerdictBlock, VerdictReuse, VerdictDefer, VerdictAdvise:
		default:
			t.Fatalf("unknown decision %q", first.Verdict)
		}
		a, _ := json.Marshal(first)
		second, err := decideBytes(data)
		if err != nil {
			t.Fatalf("second run failed: %v", err)
		}
		if b, _ := json.Marshal(second); !bytes.Equal(a, b) {
			t.Fatalf("same input, different output:\n%s\n%s", a, b)
		}
	})
}

// FuzzPlainHTTPURL checks that every URL the fast path accepts also passes
// the url.Parse test it stands in for.
func FuzzPlainHTTPURL(f *testing.F) {
	for _, s := range []string{"https://api.example.com/v1/x?q=1#f", "http://a:8080", "https://a:/", "http://.", "https://a@b/",
		"https://[::1]/", "https://a/%zz", "HTTPS://a/", "https://a b/", "http://a:1:2/", "https://-/",
		"https://a:65536/", "https://a:000065535/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if plainHTTPURL(s) {
			if msg := parseAbsoluteURL(s); msg != "" {
				t.Fatalf("fast path accepts %q, url.Parse test says %s", s, msg)
			}
		}
	})
}
