package pattern

import (
	"encoding/base64"
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"
)

// matchCases are the throughput corpus: long inputs (a 4.4 KB and a 64 KB
// base64 string) and short ones (timestamps, ids, emails, UUIDs), each
// under a pattern schemas use for it.
func matchCases() []struct{ name, pattern, in string } {
	raw := make([]byte, 3300)
	for i := range raw {
		raw[i] = byte(i * 7)
	}
	b64 := base64.StdEncoding.EncodeToString(raw) // 4,400 bytes
	big := make([]byte, 48*1024)
	for i := range big {
		big[i] = byte(i * 13)
	}
	b64big := base64.StdEncoding.EncodeToString(big) // 65,536 bytes
	return []struct{ name, pattern, in string }{
		{"base64_4K", `^[A-Za-z0-9+/]*={0,2}$`, b64},
		{"base64_64K", `^[A-Za-z0-9+/]*={0,2}$`, b64big},
		{"text_64K_unanchored", `\d{3}-\d{4}`, strings.Repeat("call me maybe, ", 4369)},
		{"timestamp", `^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$`, "2026-11-23T18:43:33.123Z"},
		{"uuid", `^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`, "3f2504e0-4f89-41d3-9a0c-0305e82c3301"},
		{"email", `^[^@\s]+@[^@\s]+\.[a-z]{2,}$`, "someone.else@example.com"},
		{"id", `^cus_[a-zA-Z0-9]{8,}$`, "cus_9s8d7f6g5h4j"},
		{"enum", `^(pd|pw|pm|py)$`, "pm"},
		{"phone_search", `\d{3}-\d{4}`, "call 555-0123 after noon"},
	}
}

// BenchmarkMatch measures matching alone, the pattern compiled once:
// this package's DFA, its Pike VM (the engine before the DFA), and Go's
// regexp on the same pattern and input. Bytes per second gives ns/byte.
func BenchmarkMatch(b *testing.B) {
	for _, c := range matchCases() {
		p, _, err := Compile(c.pattern, 3000)
		if err != nil || p == nil {
			b.Fatalf("Compile(%q) = %v, %v", c.pattern, p, err)
		}
		re := regexp.MustCompile(c.pattern)
		want := re.MatchString(c.in)
		if p.MatchString(c.in) != want || p.pikeMatch(c.in) != want {
			b.Fatalf("%s: answers differ", c.name)
		}
		b.Run(c.name+"/dfa", func(b *testing.B) {
			b.SetBytes(int64(len(c.in)))
			for b.Loop() {
				p.MatchString(c.in)
			}
		})
		b.Run(c.name+"/pikevm", func(b *testing.B) {
			b.SetBytes(int64(len(c.in)))
			for b.Loop() {
				p.pikeMatch(c.in)
			}
		})
		b.Run(c.name+"/regexp", func(b *testing.B) {
			b.SetBytes(int64(len(c.in)))
			for b.Loop() {
				re.MatchString(c.in)
			}
		})
	}
}

// BenchmarkCompileAndMatch measures what a request pays: compile, then one
// match, as the validator does for a fresh schema.
func BenchmarkCompileAndMatch(b *testing.B) {
	for _, c := range matchCases() {
		b.Run(c.name+"/dfa", func(b *testing.B) {
			b.SetBytes(int64(len(c.in)))
			b.ReportAllocs()
			for b.Loop() {
				p, _, _ := Compile(c.pattern, 3000)
				p.MatchString(c.in)
			}
		})
		b.Run(c.name+"/regexp", func(b *testing.B) {
			b.SetBytes(int64(len(c.in)))
			b.ReportAllocs()
			for b.Loop() {
				regexp.MustCompile(c.pattern).MatchString(c.in)
			}
		})
	}
}

// eventValues returns n values of each of the three patterned fields of
// an event batch (an id, a UUID and a timestamp), generated as the
// benchmark corpus's events are, with the patterns schemas give them.
func eventValues(n int) (patterns [3]string, values [3][]string) {
	patterns = [3]string{
		`^evt_[A-Za-z0-9]{16}$`,
		`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`,
		`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$`,
	}
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	const hex = "0123456789abcdef"
	x := uint32(2463534242)
	next := func(k int) int { // xorshift32
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		return int(x % uint32(k))
	}
	pick := func(set string, k int) string {
		b := make([]byte, k)
		for i := range b {
			b[i] = set[next(len(set))]
		}
		return string(b)
	}
	for range n {
		values[0] = append(values[0], "evt_"+pick(alnum, 16))
		values[1] = append(values[1], pick(hex, 8)+"-"+pick(hex, 4)+"-"+pick(hex, 4)+"-"+pick(hex, 4)+"-"+pick(hex, 12))
		values[2] = append(values[2], fmt.Sprintf("2026-11-%02dT%02d:%02d:%02d.%03dZ",
			1+next(28), next(24), next(60), next(60), next(1000)))
	}
	return patterns, values
}

// BenchmarkEvents measures what validating a batch of 200 events spends
// matching: each of its three patterns, compiled once, matches its 200
// values with a State of its own, fresh for each batch, as the validator
// gives them. Each sub-benchmark reports the work MatchBudget counted, so
// that a change to the matchers shows whether it kept the counts.
func BenchmarkEvents(b *testing.B) {
	patterns, values := eventValues(200)
	var ps [3]*Pattern
	for i, src := range patterns {
		p, _, err := Compile(src, 3000)
		if err != nil {
			b.Fatal(err)
		}
		ps[i] = p
	}
	run := func(b *testing.B, which []int) {
		var work int
		for b.Loop() {
			work = 0
			for _, i := range which {
				var st State
				for _, v := range values[i] {
					matched, w, _ := ps[i].MatchBudget(&st, v, math.MaxInt)
					if !matched {
						b.Fatalf("%q does not match %q", v, patterns[i])
					}
					work += w
				}
			}
		}
		b.ReportMetric(float64(work), "work/op")
	}
	b.Run("all", func(b *testing.B) { run(b, []int{0, 1, 2}) })
	b.Run("id", func(b *testing.B) { run(b, []int{0}) })
	b.Run("uuid", func(b *testing.B) { run(b, []int{1}) })
	b.Run("timestamp", func(b *testing.B) { run(b, []int{2}) })
}

// compileCases are the patterns of the benchmark corpus's schemas
// (testdata/bench), which a Check compiles afresh on every request.
var compileCases = []struct{ name, pattern string }{
	{"event_id", `^evt_[A-Za-z0-9]{16}$`},
	{"timestamp", `^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$`},
	{"uuid", `^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`},
	{"email", `^[^@\s]+@[^@\s]+\.[a-z]{2,}$`},
	{"enum", `^(pd|pw|pm|py)$`},
	{"slug", `^[A-Za-z0-9-]+$`},
	{"customer", `^cus_[a-zA-Z0-9]{8,}$`},
	{"sku", `^[A-Z]{3}-[0-9]{4}$`},
	{"postcode", `^[0-9A-Z -]{3,10}$`},
	{"mime", `^[a-z]+/[a-z0-9.+-]+$`},
	{"filename", `^[^/\\]+$`},
	{"base64", `^[A-Za-z0-9+/]*={0,2}$`},
}

// BenchmarkCompile measures compiling alone, as a Check does for each
// pattern of its schema.
func BenchmarkCompile(b *testing.B) {
	for _, c := range compileCases {
		b.Run(c.name+"/preflight", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, _, err := CompileWithin(c.pattern, 3000, 1<<16); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/regexp", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				regexp.MustCompile(c.pattern)
			}
		})
	}
}
