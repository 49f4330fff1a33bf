package preflight

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// Two paths must read alike: CheckJSON and DecideJSON read bytes, Check and
// Decide read Go values, and each pair answers one request the same way,
// result or error. The tests here hold them to it.

// readAlikeSeeds adds the golden requests, the benchmark corpus and every
// fuzz seed of FuzzCheck and FuzzDecide to f.
func readAlikeSeeds(f *testing.F) {
	for _, pattern := range []string{"testdata/check/*.json", "testdata/decide/*.json", "testdata/bench/*.json"} {
		addSeeds(f, pattern)
	}
	for _, dir := range []string{"FuzzCheck", "FuzzDecide"} {
		files, _ := filepath.Glob(filepath.Join("testdata", "fuzz", dir, "*"))
		for _, name := range files {
			if data, ok := corpusBytes(f, name); ok {
				f.Add(data)
			}
		}
	}
}

// checkReadsAlike fails t unless Check of data decoded answers as
// CheckJSON(data) does, and as CheckJSON of that request encoded again.
func checkReadsAlike(t *testing.T, data []byte) {
	t.Helper()
	want, wantErr := CheckJSON(data)
	req, err := DecodeCheckRequest(data)
	if err != nil {
		if diff := cmp.Diff(wantErr, err); diff != "" {
			t.Fatalf("DecodeCheckRequest and CheckJSON refuse differently (-CheckJSON +decode):\n%s", diff)
		}
		return
	}
	got, gotErr := Check(req)
	if diff := cmp.Diff(answer(want, wantErr), answer(got, gotErr)); diff != "" {
		t.Fatalf("Check(DecodeCheckRequest(data)) differs from CheckJSON(data) (-bytes +Go):\n%s", diff)
	}
	enc, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	again, againErr := CheckJSON(enc)
	if diff := cmp.Diff(answer(got, gotErr), answer(again, againErr)); diff != "" {
		t.Fatalf("CheckJSON of the decoded request encoded differs from Check of it (-Go +encoded):\n%s", diff)
	}
}

// decideReadsAlike is checkReadsAlike for DecideJSON and Decide. The
// decoded request drops unknown top-level members, which DecideJSON lists
// as ignored after every other issue.
func decideReadsAlike(t *testing.T, data []byte) {
	t.Helper()
	want, wantErr := DecideJSON(data)
	req, err := DecodeToolCallRequest(data)
	if err != nil {
		if diff := cmp.Diff(wantErr, err); diff != "" {
			t.Fatalf("DecodeToolCallRequest and DecideJSON refuse differently (-DecideJSON +decode):\n%s", diff)
		}
		return
	}
	got, gotErr := Decide(req)
	if want != nil {
		want.Issues = slices.DeleteFunc(want.Issues, func(is Issue) bool { return is.Code == IssueUnknownFieldIgnored })
	}
	if diff := cmp.Diff(answer(want, wantErr), answer(got, gotErr)); diff != "" {
		t.Fatalf("Decide(DecodeToolCallRequest(data)) differs from DecideJSON(data) (-bytes +Go):\n%s", diff)
	}
	enc, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	again, againErr := DecideJSON(enc)
	if diff := cmp.Diff(answer(got, gotErr), answer(again, againErr)); diff != "" {
		t.Fatalf("DecideJSON of the decoded request encoded differs from Decide of it (-Go +encoded):\n%s", diff)
	}
}

// answered is a result or an error, for one cmp.Diff.
type answered[R any] struct {
	Res R
	Err error
}

func answer[R any](res R, err error) answered[R] { return answered[R]{res, err} }

// FuzzCheckReadsAlike: Check(DecodeCheckRequest(b)) equals CheckJSON(b).
func FuzzCheckReadsAlike(f *testing.F) {
	readAlikeSeeds(f)
	f.Fuzz(checkReadsAlike)
}

// FuzzDecideReadsAlike: Decide(DecodeToolCallRequest(b)) equals
// DecideJSON(b), but for the ignored members.
func FuzzDecideReadsAlike(f *testing.F) {
	readAlikeSeeds(f)
	f.Fuzz(decideReadsAlike)
}

// FuzzGoBuiltReadsAsBytes edits a Go-built request with fuzzed strings,
// numbers and raw JSON, and wants Check and Decide to answer as CheckJSON
// and DecideJSON answer its encoding, errors included, whenever
// encoding/json writes the request as it is (its strings UTF-8, its
// numbers and raw members JSON, no required number empty). Strings that
// are not UTF-8 are held to the wire form by TestGoBuiltInvalidUTF8.
func FuzzGoBuiltReadsAsBytes(f *testing.F) {
	f.Add("POST", "https://a.example/x", "X-Api-Key", "v", "0.5", []byte(`{"type":"object"}`), []byte(`{"query":"go"}`))
	f.Add("get", "ftp://a", "x-a", "X-A", "1e400", []byte(`{"type":"string","pattern":"^a+$"}`), []byte(`[1,2]`))
	f.Add("", "https://a.example:99999/", "", "", "-1", []byte(`{"properties":{"a":{"format":"uri"}}}`), []byte(`null`))
	f.Add("P OST", "http://a", "Cookie", "c", "1000000001", []byte(`{"type":"integer","minimum":1}`), []byte(`{"url":"relative"}`))
	f.Add("HEAD", "https://a/", "a", "b", "2.0", []byte(`[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]`), []byte(`{"a":[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]}`))
	f.Fuzz(func(t *testing.T, method, url, name, value, num string, raw, payload []byte) {
		for _, s := range []string{method, url, name, value} {
			if !utf8.ValidString(s) {
				return
			}
		}
		cr := &CheckRequest{
			Request: ProposedRequest{Method: method, URL: url, Headers: map[string]string{name: value, "Accept": "*/*"}, Body: payload},
			Schema:  raw,
			Economics: &CheckEconomics{DownstreamCostUSD: json.Number(num), RetryCostUSD: "0.01",
				BudgetRemainingUSD: json.Number(num), PriorInvalidProbability: json.Number(num)},
		}
		if enc, err := json.Marshal(cr); err == nil && num != "" {
			res, err := Check(cr)
			wire, wireErr := CheckJSON(enc)
			if diff := cmp.Diff(answer(wire, wireErr), answer(res, err)); diff != "" {
				t.Errorf("Check differs from CheckJSON of the encoded request (-bytes +Go):\n%s", diff)
			}
		}
		tr := baseCall()
		tr.RunID, tr.Tool.Operation, tr.Tool.Request = name, value, payload
		tr.Budget.ReservedUSD, tr.RetryCap, tr.FreshnessTTLSeconds = json.Number(num), json.Number(num), json.Number(num)
		tr.Task = &Task{GoalHash: url}
		tr.History = []HistoryEntry{{ToolCallID: method, Fingerprint: "f", Outcome: Outcome(method), AgeSeconds: json.Number(num)}}
		if enc, err := json.Marshal(tr); err == nil && num != "" {
			d, err := Decide(tr)
			wire, wireErr := DecideJSON(enc)
			if diff := cmp.Diff(answer(wire, wireErr), answer(d, err)); diff != "" {
				t.Errorf("Decide differs from DecideJSON of the encoded request (-bytes +Go):\n%s", diff)
			}
		}
	})
}

// TestGoBuiltLimits: a Go-built request over a depth or node limit is
// refused as the same request sent as JSON is, wherever the limit is
// crossed: in the payload, or in the members after it.
func TestGoBuiltLimits(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 14) + "1" + strings.Repeat("}", 14)
	array := func(n int) string { return "[" + strings.Repeat("0,", n-1) + "0]" }
	big := array(9995)
	history := func(n int) []HistoryEntry {
		h := make([]HistoryEntry, n)
		for i := range h {
			h[i] = HistoryEntry{ToolCallID: "c", Fingerprint: "f", Outcome: OutcomeSuccess, AgeSeconds: "1", GoalHash: "g"}
		}
		return h
	}
	tests := []struct {
		name, at string // at: where the wire form crosses the limit
		edit     func(r *ToolCallRequest)
	}{
		{"payload too deep", "/tool/request/a", func(r *ToolCallRequest) { r.Tool.Request = json.RawMessage(deep) }},
		{"payload over the node limit", "/tool/request/a/", func(r *ToolCallRequest) { r.Tool.Request = json.RawMessage(`{"a":` + big + `}`) }},
		{"node limit crossed in the budget", "/budget", func(r *ToolCallRequest) {
			r.Tool.Request = json.RawMessage(`{"a":` + array(9990) + `}`)
		}},
		{"node limit crossed in the history", "/history/", func(r *ToolCallRequest) {
			r.Tool.Request = json.RawMessage(`{"a":` + array(9930) + `}`)
			r.History = history(20)
		}},
		{"too much history", "/history", func(r *ToolCallRequest) { r.History = history(MaxHistory + 1) }},
		{"far too much history", "/history/", func(r *ToolCallRequest) { r.History = history(1700) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := baseCall()
			tc.edit(req)
			enc, err := json.Marshal(req)
			if err != nil {
				t.Fatal(err)
			}
			_, goErr := Decide(req)
			_, wireErr := DecideJSON(enc)
			var e *Error
			if !errors.As(wireErr, &e) || e.Code != ErrorLimitExceeded || !strings.HasPrefix(e.Details[0].Path, tc.at) {
				t.Fatalf("the wire form gives %v, want limit_exceeded at %s", wireErr, tc.at)
			}
			if diff := cmp.Diff(wireErr, goErr); diff != "" {
				t.Errorf("(-wire +Go-built):\n%s", diff)
			}
		})
	}
}

// corpusBytes reads the []byte of a one-argument fuzz corpus file.
func corpusBytes(t testing.TB, name string) ([]byte, bool) {
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(data, []byte("\n"))
	if len(lines) < 2 || !bytes.HasPrefix(lines[1], []byte("[]byte(")) {
		return nil, false
	}
	s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(string(lines[1]), "[]byte("), ")"))
	if err != nil {
		return nil, false
	}
	return []byte(s), true
}

// TestDecodedRequestOwnsItsBytes: a caller that reuses its read buffer after
// decoding must not change the decoded request or its answer.
func TestDecodedRequestOwnsItsBytes(t *testing.T) {
	data := []byte(`{"runId":"r","stepId":"s","tool":{"provider":"search","operation":"web_search",
		"request":{"query":"go"},"estimatedExternalCostUsd":0.01},"budget":{"remainingUsd":1}}`)
	req, err := DecodeToolCallRequest(data)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := Decide(req)
	copy(data, bytes.Repeat([]byte("x"), len(data)))
	after, err := Decide(req)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, after); diff != "" || req.Tool.Provider != "search" {
		t.Errorf("overwriting the input buffer changed the request (provider %q) or its decision (-before +after):\n%s", req.Tool.Provider, diff)
	}

	check := []byte(`{"request":{"method":"POST","url":"https://a.example/","body":{"n":1}},"schema":{"type":"object"}}`)
	creq, err := DecodeCheckRequest(check)
	if err != nil {
		t.Fatal(err)
	}
	cbefore, _ := Check(creq)
	copy(check, bytes.Repeat([]byte(" "), len(check)))
	cafter, err := Check(creq)
	if err != nil || cbefore.RequestHash != cafter.RequestHash {
		t.Errorf("overwriting the input buffer changed the check: %v, hash %s -> %s", err, cbefore.RequestHash, cafter.RequestHash)
	}
}

// TestGoBuiltRequestNumbers: encoding/json would write an empty json.Number
// as 0, so a Go-built request with a required number left empty, or with
// text that is not a number, gets the error a JSON caller would.
func TestGoBuiltRequestNumbers(t *testing.T) {
	req := baseCall()
	req.Tool.EstimatedExternalCostUSD = ""
	req.Budget.ReservedUSD = "abc"
	_, err := Decide(req)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v, want *Error", err)
	}
	want := []Issue{
		{Path: "/tool/estimatedExternalCostUsd", Code: IssueRequired, Message: "missing required number (the json.Number is empty)"},
		{Path: "/budget/reservedUsd", Code: IssueType, Message: `expected a number, found "abc"`},
	}
	if diff := cmp.Diff(want, e.Details); diff != "" || e.Code != ErrorInvalidRequest {
		t.Errorf("code %s, details (-want +got):\n%s", e.Code, diff)
	}
	_, err = Check(&CheckRequest{Request: ProposedRequest{Method: "POST", URL: "https://a.example/"},
		Schema: []byte(`{}`), Economics: &CheckEconomics{RetryCostUSD: "0"}})
	if !errors.As(err, &e) || len(e.Details) != 1 || e.Details[0].Path != "/economics/downstreamCostUsd" {
		t.Errorf("missing downstreamCostUsd: got %v", err)
	}
}

// TestConcurrentChecksReuseTapes: goroutines decoding at once take parse
// tapes from one pool and give them back; each must still get exactly the
// answer a lone call gets, whatever document used its tape before.
func TestConcurrentChecksReuseTapes(t *testing.T) {
	files := benchFiles(t, "check_*.json")
	type answer struct {
		Res *CheckResult
		Err string
	}
	want := map[string]answer{}
	var names []string
	for name, data := range files {
		res, err := checkBytes(data)
		want[name] = answer{res, fmt.Sprint(err)}
		names = append(names, name)
	}
	done := make(chan error, 8)
	for g := range cap(done) {
		go func() {
			for i := range 40 {
				name := names[(g*7+i)%len(names)]
				res, err := checkBytes(files[name])
				if diff := cmp.Diff(want[name], answer{res, fmt.Sprint(err)}); diff != "" {
					done <- fmt.Errorf("%s, goroutine %d, call %d (-alone +concurrent):\n%s", name, g, i, diff)
					return
				}
			}
			done <- nil
		}()
	}
	for range cap(done) {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
