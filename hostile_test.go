package preflight

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/strictjson"
)

// Hostile input at the library level: every case is answered with a result
// or an *Error of a stated code, never a panic, and within the limits the
// decoders enforce. Timings are not asserted here; the Benchmark functions
// at the end measure them.

// hostileCheck wraps body (a JSON value) as the body of a check request
// validated against schema.
func hostileCheck(body, schema string) string {
	return `{"request":{"method":"POST","url":"https://api.example.com/x","body":` + body + `},"schema":` + schema + `}`
}

// hostileTool is a search tool-call body whose tool.request holds extra
// members (a string of `"name":value` pairs, or "") and whose top level ends
// with tail (a string of `,"name":value` pairs, or "").
func hostileTool(extra, tail string) string {
	if extra != "" {
		extra = "," + extra
	}
	return `{"runId":"r","stepId":"s","tool":{"provider":"search","operation":"web_search","request":{"query":"q"` + extra +
		`},"estimatedExternalCostUsd":0.01},"budget":{"remainingUsd":1}` + tail + `}`
}

// toolNodes is a tool-call body of exactly n nodes (n >= 12): hostileTool
// has 12, the rest are zeros in an array inside tool.request.
func toolNodes(n int) string {
	zeros := strings.TrimSuffix(strings.Repeat("0,", n-12), ",")
	return hostileTool(`"pad":[`+zeros+`]`, "")
}

// checkDepth is a check request nested exactly depth levels deep (depth >=
// 3): the top-level object is level 1, "request" 2, the body 3 and below.
func checkDepth(depth int) string {
	n := depth - 2
	return hostileCheck(strings.Repeat("[", n)+strings.Repeat("]", n), `{}`)
}

// history is a tool-call body with n history entries whose fingerprints
// are fpLen characters long.
func history(n, fpLen int) string {
	entries := make([]string, n)
	for i := range entries {
		fp := strings.Repeat(fmt.Sprintf("%x", i%16), fpLen)
		entries[i] = fmt.Sprintf(`{"toolCallId":"c%d","fingerprint":%q,"outcome":"transient_failure","ageSeconds":%d}`, i, fp, i)
	}
	return hostileTool("", `,"history":[`+strings.Join(entries, ",")+`]`)
}

// patternsSchema is a schema whose properties p0, p1, ... each carry one of
// the patterns.
func patternsSchema(patterns ...string) string {
	props := make([]string, len(patterns))
	for i, p := range patterns {
		q, _ := json.Marshal(p)
		props[i] = fmt.Sprintf(`"p%d":{"pattern":%s}`, i, q)
	}
	return `{"properties":{` + strings.Join(props, ",") + `}}`
}

// fill repeats unit as often as fits in n bytes.
func fill(unit string, n int) string { return strings.Repeat(unit, n/len(unit)) }

// hostileCase is one hostile document and the answer it must get: a nil
// error (code "") or an *Error with code and, when detail is set, a first
// detail with that issue code.
type hostileCase struct {
	name   string
	decide bool // the tool-call decoder and Decide; else the check decoder and Check
	body   string
	code   ErrorCode
	detail IssueCode
}

func hostileCases() []hostileCase {
	brackets := strings.Repeat("[", 65536)
	words := make([]string, 0, 400)
	for i := range 400 {
		words = append(words, fmt.Sprintf("w%03d", i))
	}
	return []hostileCase{
		// Depth and size.
		{"65 KiB of [ on check", false, brackets, ErrorLimitExceeded, IssueMaxDepth},
		{"65 KiB of [ on tool call", true, brackets, ErrorLimitExceeded, IssueMaxDepth},
		{"65 KiB of [ inside a check body", false, hostileCheck(brackets, `{}`), ErrorLimitExceeded, IssueMaxDepth},
		{"check nested 511 levels", false, checkDepth(511), "", ""},
		{"check nested 512 levels (the limit)", false, checkDepth(512), "", ""},
		{"check nested 513 levels", false, checkDepth(513), ErrorLimitExceeded, IssueMaxDepth},
		{"tool call of 10,000 nodes (the limit)", true, toolNodes(10000), "", ""},
		{"tool call of 10,001 nodes", true, toolNodes(10001), ErrorLimitExceeded, IssueMaxNodes},
		{"100 history entries with 500-char fingerprints", true, history(100, 500), "", ""},
		{"101 history entries", true, history(101, 500), ErrorLimitExceeded, IssueMaxHistory},

		// Numbers.
		{"1e400 in a check body", false, hostileCheck(`{"n":1e400}`, `{}`), "", ""},
		{"1e400 in a schema const", false, hostileCheck(`1`, `{"const":1e400}`), "", ""},
		{"1e400 in a tool payload", true, hostileTool(`"max_results":1e400`, ""), "", ""},
		{"1e400 as a budget", true, strings.Replace(hostileTool("", ""), `"remainingUsd":1`, `"remainingUsd":1e400`, 1), ErrorInvalidRequest, IssueMaximum},
		{"-0 in a check body", false, hostileCheck(`{"n":-0}`, `{"properties":{"n":{"minimum":0,"maximum":0}}}`), "", ""},
		{"-0 as a budget", true, strings.Replace(hostileTool("", ""), `"remainingUsd":1`, `"remainingUsd":-0`, 1), "", ""},
		{"1e-400 in a check body", false, hostileCheck(`{"n":1e-400}`, `{}`), "", ""},
		{"400-digit integer in a check body", false, hostileCheck(strings.Repeat("9", 400), `{"type":"integer"}`), "", ""},

		// Strings.
		{"invalid UTF-8 in a value", false, hostileCheck("\"\xff\xfe\"", `{}`), ErrorInvalidJSON, IssueInvalidUTF8},
		{"invalid UTF-8 in a key", true, hostileTool("\"\xc3\x28\":1", ""), ErrorInvalidJSON, IssueInvalidUTF8},
		{"overlong UTF-8 encoding", false, hostileCheck("\"\xc0\xaf\"", `{}`), ErrorInvalidJSON, IssueInvalidUTF8},
		{"UTF-8 encoded surrogate", false, hostileCheck("\"\xed\xa0\x80\"", `{}`), ErrorInvalidJSON, IssueInvalidUTF8},
		{"lone high surrogate escape", false, hostileCheck(`"\ud800"`, `{}`), ErrorInvalidJSON, IssueInvalidUTF8},
		{"lone low surrogate escape", true, hostileTool(`"x":"\udc00"`, ""), ErrorInvalidJSON, IssueInvalidUTF8},
		{"surrogates in the wrong order", false, hostileCheck(`"\udc00\ud800"`, `{}`), ErrorInvalidJSON, IssueInvalidUTF8},
		{"high surrogate then a letter", false, hostileCheck(`"\ud83dx"`, `{}`), ErrorInvalidJSON, IssueInvalidUTF8},
		{"a valid surrogate pair", false, hostileCheck(`"\ud83d\ude00"`, `{"pattern":"^.$"}`), "", ""},
		{"NUL escape in a key", false, hostileCheck(`{"\u0000":1}`, `{"additionalProperties":false}`), "", ""},

		// Duplicate keys, at every level.
		{"duplicate top-level key", true, `{"runId":"a","runId":"b"}`, ErrorInvalidJSON, IssueDuplicateKey},
		{"duplicate key in a check body", false, hostileCheck(`{"a":1,"b":2,"a":1}`, `{}`), ErrorInvalidJSON, IssueDuplicateKey},
		{"duplicate key in schema properties", false, hostileCheck(`{}`, `{"properties":{"a":{},"a":{}}}`), ErrorInvalidJSON, IssueDuplicateKey},
		{"duplicate key in a tool payload", true, hostileTool(`"query":"again"`, ""), ErrorInvalidJSON, IssueDuplicateKey},
		{"duplicate key spelled with an escape", false, hostileCheck(`{"a":1,"\u0061":2}`, `{}`), ErrorInvalidJSON, IssueDuplicateKey},

		// Patterns.
		{"repetition bomb over the cap", false, hostileCheck(`"a"`, patternsSchema(`(((a{100}){100}){100})`)), ErrorUnsupportedPattern, IssueUnsupportedPattern},
		{"nested repeat within the cap", false, hostileCheck(`"a"`, patternsSchema(`(?:a{1000}){2}`)), "", ""},
		{"nested repeat over the cap", false, hostileCheck(`"a"`, patternsSchema(`(?:a{1000}){3}`)), ErrorUnsupportedPattern, IssueUnsupportedPattern},
		{"(?:a?){1000} is within the cap", false, hostileCheck(`"aaa"`, patternsSchema(`(?:a?){1000}`)), "", ""},
		{"\\p{L}{1000} is within the cap", false, hostileCheck(`"abc"`, patternsSchema(`\p{L}{1000}`)), "", ""},
		{"one pattern over the cap", false, hostileCheck(`"a"`, patternsSchema(`(?:a|b){1000}(?:a|b){1000}(?:a|b){1000}`)), ErrorUnsupportedPattern, IssueUnsupportedPattern},
		{"32 KiB of (?:a|b){1000}", false, hostileCheck(`"a"`, patternsSchema(fill(`(?:a|b){1000}`, 32000))), ErrorUnsupportedPattern, IssueUnsupportedPattern},
		{"32 KiB of [a-z]{1000}", false, hostileCheck(`"a"`, patternsSchema(fill(`[a-z]{1000}`, 32000))), ErrorUnsupportedPattern, IssueUnsupportedPattern},
		{"32 KiB of \\p{L}{1000}", false, hostileCheck(`"a"`, patternsSchema(fill(`\p{L}{1000}`, 28000))), ErrorUnsupportedPattern, IssueUnsupportedPattern},
		{"32 KiB literal pattern", false, hostileCheck(`"a"`, patternsSchema(strings.Repeat("a", 32000))), ErrorUnsupportedPattern, IssueUnsupportedPattern},
		{"many patterns over the schema total", false, hostileCheck(`{}`, patternsSchema(slicesRepeat(`(?:a?){1000}x`, 20)...)), ErrorUnsupportedPattern, IssueUnsupportedPattern},
		{"alternation of 400 words", false, hostileCheck(`"w123"`, patternsSchema(`^(?:`+strings.Join(words, "|")+`)$`)), "", ""},
		{"pattern nested 1000 groups", false, hostileCheck(`"a"`, patternsSchema(strings.Repeat("(", 1000)+"a"+strings.Repeat(")", 1000))), ErrorUnsupportedPattern, IssueUnsupportedPattern},
		{"schema over 32 KiB", false, hostileCheck(`"a"`, patternsSchema(strings.Repeat("a", 33000))), ErrorSchemaTooLarge, IssueSchemaTooLarge},
	}
}

func slicesRepeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func TestHostileInputs(t *testing.T) {
	for _, tc := range hostileCases() {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.decide {
				var d *ToolCallDecision
				d, err = decideBytes([]byte(tc.body))
				if err == nil && (d.Issues == nil || len(d.ReasonCodes) == 0) {
					t.Fatalf("decision breaks the response shape: %+v", d)
				}
			} else {
				var r *CheckResult
				r, err = checkBytes([]byte(tc.body))
				if err == nil && (r.Errors == nil || !hex64.MatchString(r.RequestHash)) {
					t.Fatalf("result breaks the response shape: %+v", r)
				}
			}
			if tc.code == "" {
				if err != nil {
					t.Fatalf("got %v, want a result", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v, want *Error %s", err, tc.code)
			}
			if e.Code != tc.code {
				t.Errorf("code %s, want %s (%v)", e.Code, tc.code, e)
			}
			if tc.detail != "" && (len(e.Details) == 0 || e.Details[0].Code != tc.detail) {
				t.Errorf("details %+v, want the first of code %s", e.Details, tc.detail)
			}
			for _, d := range e.Details {
				if len(d.Message) > 400 || len(d.Path) > 8000 {
					t.Errorf("detail echoes too much: path %d bytes, message %d bytes", len(d.Path), len(d.Message))
				}
			}
		})
	}
}

// TestMinusZero: -0 is accepted wherever a number is, and hashes exactly
// as 0 (RFC 8785 writes both as 0), so a decision or check is the same.
func TestMinusZero(t *testing.T) {
	hash := func(body string) string {
		r, err := checkBytes([]byte(hostileCheck(body, `{}`)))
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		return r.RequestHash
	}
	zero := hash(`{"n":0}`)
	for _, body := range []string{`{"n":-0}`, `{"n":-0.0}`, `{"n":0e10}`, `{"n":-0E-5}`, `{"n":0.000}`} {
		if got := hash(body); got != zero {
			t.Errorf("requestHash of %s = %s, want that of 0, %s", body, got, zero)
		}
	}
	decision := func(remaining string) []byte {
		d, err := decideBytes([]byte(strings.Replace(hostileTool(`"max_results":1`, ""), `"remainingUsd":1`, `"remainingUsd":`+remaining, 1)))
		if err != nil {
			t.Fatalf("remainingUsd %s: %v", remaining, err)
		}
		b, _ := json.Marshal(d)
		return b
	}
	if a, b := decision("0"), decision("-0"); !bytes.Equal(a, b) {
		t.Errorf("remainingUsd -0 decides differently from 0:\n%s\n%s", b, a)
	}
}

// reorder writes v as JSON with the members of every object in reverse
// order; data is the document v was parsed from.
func reorder(b *bytes.Buffer, v strictjson.Value, data []byte) {
	switch v.Kind() {
	case strictjson.Object:
		var ms []strictjson.Member
		for it := v.Iter(); it.Next(); {
			ms = append(ms, it.Member())
		}
		b.WriteByte('{')
		for i := len(ms) - 1; i >= 0; i-- {
			k, _ := json.Marshal(ms[i].Key)
			b.Write(k)
			b.WriteByte(':')
			reorder(b, ms[i].Value, data)
			if i > 0 {
				b.WriteByte(',')
			}
		}
		b.WriteByte('}')
	case strictjson.Array:
		b.WriteByte('[')
		for it := v.Iter(); it.Next(); {
			if it.Index() > 0 {
				b.WriteByte(',')
			}
			reorder(b, it.Value(), data)
		}
		b.WriteByte(']')
	default:
		b.Write(data[v.Start():v.End()])
	}
}

// FuzzKeyOrder checks that member order never changes an answer's identity:
// with every object's members reversed, Check gives the same validity and
// requestHash and Decide the same decision, reason codes and fingerprint;
// an error keeps its code. It also checks that errors are deterministic.
func FuzzKeyOrder(f *testing.F) {
	addSeeds(f, "testdata/check/*.json")
	addSeeds(f, "testdata/decide/*.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := strictjson.Parse(data, strictjson.Limits{MaxDepth: 64})
		if err != nil {
			return
		}
		var b bytes.Buffer
		reorder(&b, v, data)
		other := b.Bytes()

		c1, err1 := checkBytes(data)
		c2, err2 := checkBytes(other)
		sameOutcome(t, "check", err1, err2)
		if err1 == nil && err2 == nil && (c1.Valid != c2.Valid || c1.RequestHash != c2.RequestHash || len(c1.Errors) != len(c2.Errors)) {
			t.Fatalf("reordered members changed the check: %+v / %+v", c1, c2)
		}

		d1, err1 := decideBytes(data)
		d2, err2 := decideBytes(other)
		sameOutcome(t, "decide", err1, err2)
		if err1 == nil && err2 == nil {
			if d1.Verdict != d2.Verdict || d1.RequestFingerprint != d2.RequestFingerprint ||
				fmt.Sprint(d1.ReasonCodes) != fmt.Sprint(d2.ReasonCodes) || d1.MatchedCallID != d2.MatchedCallID {
				t.Fatalf("reordered members changed the decision: %+v / %+v", d1, d2)
			}
		}
		if _, again := decideBytes(data); (err1 == nil) != (again == nil) || (err1 != nil && err1.Error() != again.Error()) {
			t.Fatalf("same input, different errors: %v / %v", err1, again)
		}
	})
}

// sameOutcome fails unless err1 and err2 are both nil or both *Error with
// the same code.
func sameOutcome(t *testing.T, what string, err1, err2 error) {
	t.Helper()
	var e1, e2 *Error
	switch {
	case err1 == nil && err2 == nil:
	case errors.As(err1, &e1) && errors.As(err2, &e2) && e1.Code == e2.Code:
	default:
		t.Fatalf("%s: reordered members changed the outcome: %v / %v", what, err1, err2)
	}
}

// BenchmarkHostile measures the hostile documents: each iteration decodes
// and evaluates one (errors are expected and not checked here).
func BenchmarkHostile(b *testing.B) {
	for _, tc := range hostileCases() {
		b.Run(strings.ReplaceAll(tc.name, " ", "_"), func(b *testing.B) {
			data := []byte(tc.body)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if tc.decide {
					decideBytes(data)
				} else {
					checkBytes(data)
				}
			}
		})
	}
}

// BenchmarkPatternMatchWorst measures the slowest matching this package
// allows, each case a pattern near the per-pattern cap against the
// longest string that fits beside it in a 64 KiB body:
//   - nullable_chain keeps the whole program alive on every byte (the
//     Pike VM's worst case; the DFA caches its few states);
//   - dfa_thrash needs a new DFA state on nearly every byte (the n-th
//     character from the end is an 'a': 2^n states), so the cache fills,
//     is cleared and refills, and each byte costs an NFA step over about
//     half the program;
//   - unicode_thrash is the same over \p{L} and non-ASCII text, which
//     takes the rune path.
//
// Its time per op is the bound stated in the report.
func BenchmarkPatternMatchWorst(b *testing.B) {
	ab := make([]byte, 65536-300)
	letters := make([]rune, 0, 65536/2)
	x := uint32(1)
	for i := range ab {
		x = x*1103515245 + 12345
		ab[i] = "ab"[x>>16&1]
		if len(letters) < (65536-300)/2 {
			letters = append(letters, []rune("aé")[x>>17&1])
		}
	}
	for _, c := range []struct{ name, pattern, text string }{
		{"nullable_chain", `(?:a?){1000}(?:b?){480}x`, strings.Repeat("a", 65536-200)},
		{"dfa_thrash", `[ab]*a[ab]{1000}[ab]{1000}[ab]{990}c`, string(ab)},
		{"unicode_thrash", `\\p{L}*a\\p{L}{1000}\\p{L}{1000}\\p{L}{990}c`, string(letters)},
	} {
		data := []byte(hostileCheck(`"`+c.text+`"`, `{"pattern":"`+c.pattern+`"}`))
		if len(data) > 65536 {
			b.Fatalf("%s: document of %d bytes does not fit the body limit", c.name, len(data))
		}
		r, err := checkBytes(data)
		if err != nil || r.Valid {
			b.Fatalf("%s: setup: %v, %+v", c.name, err, r)
		}
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				checkBytes(data)
			}
		})
	}
}
