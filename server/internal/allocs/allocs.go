// Package allocs counts allocations for the server's allocation-budget
// tests, which subtract one count from another.
package allocs

import (
	"math"
	"runtime"
	"runtime/debug"
)

// PerRun is the mean number of allocations of one call of f over runs
// calls, after one call to warm up, rounded to the nearest whole number.
// testing.AllocsPerRun truncates instead: one run of fifty that allocates
// once less (the library's Decide does so now and then) turns 16 into 15,
// and a difference of two such counts moves by one or two.
func PerRun(runs int, f func()) float64 {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	f()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return math.Round(float64(after.Mallocs-before.Mallocs) / float64(runs))
}

// RaceEnabled reports whether the binary was built with -race, whose
// instrumentation allocates.
func RaceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}
