package main

import "sync"

// heapFloorBytes is the size of the ballast that keeps the garbage
// collector from running every couple of megabytes. preflightd's live heap
// at rest is about 2 MiB, under the runtime's 4 MiB minimum goal, so with
// the default GOGC=100 a collection ran every ~450 small requests and took
// about 3 µs of CPU per request on one core (a tenth of the bare net/http
// floor's whole cost; see BenchmarkServeLoopback and the server comparison
// in BENCHMARKS.md). The ballast moves the goal to about
// 2 × (live + 16 MiB): collections become ~8 times rarer. It is never
// written, so the kernel never backs it with memory (resident size at
// rest: 24 MiB with it, 23 MiB without); the cost is up to 16 MiB more
// garbage held between collections (resident under load: 47 MiB against
// 30 MiB), a fixed amount whatever the live heap (under a flood of 4,096
// connections, ~100 MiB live, the goal moves from ~200 to ~232 MiB).
const heapFloorBytes = 16 << 20

var (
	ballastOnce sync.Once
	ballast     []byte
)

// heapFloorWanted reports whether preflightd sets its heap floor: only
// when the operator tunes the collector with neither GOGC nor GOMEMLIMIT;
// their setting is then left to work alone.
func heapFloorWanted(getenv func(string) string) bool {
	return getenv("GOGC") == "" && getenv("GOMEMLIMIT") == ""
}

// setHeapFloor allocates the ballast, once per process, when
// heapFloorWanted.
func setHeapFloor(getenv func(string) string) {
	if !heapFloorWanted(getenv) {
		return
	}
	ballastOnce.Do(func() {
		// A pointer-free allocation this large comes straight from fresh
		// pages, already zero: nothing touches it, so it is not resident,
		// and the collector never scans it.
		ballast = make([]byte, heapFloorBytes)
	})
}
