package main

import (
	"runtime"
	"testing"
)

func TestHeapFloorWanted(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, true},
		{map[string]string{"GOGC": "100"}, false},
		{map[string]string{"GOGC": "off", "GOMEMLIMIT": "1GiB"}, false},
		{map[string]string{"GOMEMLIMIT": "512MiB"}, false},
		{map[string]string{"PREFLIGHT_ADDR": "127.0.0.1:0"}, true},
	} {
		if got := heapFloorWanted(func(k string) string { return tc.env[k] }); got != tc.want {
			t.Errorf("heapFloorWanted(%v) = %t, want %t", tc.env, got, tc.want)
		}
	}
}

// TestHeapFloorMovesGoal: with the ballast, the collector's next goal is
// at least twice its size.
func TestHeapFloorMovesGoal(t *testing.T) {
	setHeapFloor(func(string) string { return "" })
	if len(ballast) != heapFloorBytes {
		t.Fatalf("ballast of %d bytes, want %d", len(ballast), heapFloorBytes)
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	if ms.HeapAlloc < heapFloorBytes || ms.NextGC < 2*heapFloorBytes {
		t.Errorf("heap %d bytes, next collection at %d; want at least %d and %d", ms.HeapAlloc, ms.NextGC, heapFloorBytes, 2*heapFloorBytes)
	}
}
