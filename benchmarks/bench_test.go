package benchmarks

import "testing"

// BenchmarkCheck measures every implementation on every check corpus case,
// bytes in to outcome out. Sub-benchmarks are named case=<case>/impl=<impl>
// so that benchstat can group them by either.
func BenchmarkCheck(b *testing.B) {
	cases, err := LoadCheckCases()
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range cases {
		b.Run("case="+c.Name, func(b *testing.B) {
			for _, impl := range CheckImpls {
				impl.Within(func() {
					run, err := impl.Prepare(c)
					if err != nil {
						b.Fatalf("%s: %v", impl.Name, err)
					}
					b.Run("impl="+impl.Name, func(b *testing.B) {
						measure(b, run)
						// Time per byte of the request, to read beside the
						// SHA-256 floor's on the same bytes.
						b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(c.Request)), "ns/B")
					})
				})
			}
		})
	}
}

// BenchmarkDecide measures preflight's Decide and the Unmarshal floor on
// every tool-call corpus case, bytes in to outcome out.
func BenchmarkDecide(b *testing.B) {
	cases, err := LoadDecideCases()
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range cases {
		b.Run("case="+c.Name, func(b *testing.B) {
			for _, impl := range DecideImpls {
				run, err := impl.Prepare(c)
				if err != nil {
					b.Fatalf("%s: %v", impl.Name, err)
				}
				b.Run("impl="+impl.Name, func(b *testing.B) { measure(b, run) })
			}
		})
	}
}

// measure times run and reports, beside the wall-clock ns/op, the
// process's CPU time per call (cpu-ns/op: user and system, every thread,
// the garbage collector's included). On a machine shared with other work
// the wall clock counts the time other processes held the core; CPU time
// does not.
func measure(b *testing.B, run Run) {
	b.ReportAllocs()
	cpu0, ok := processCPU()
	for b.Loop() {
		if _, err := run(); err != nil {
			b.Fatal(err)
		}
	}
	if cpu1, ok1 := processCPU(); ok && ok1 {
		b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}
