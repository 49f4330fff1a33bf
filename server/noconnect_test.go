package server

import (
	"net"
	"testing"
)

// TestNeverConnects proves the service never connects to the URLs it is
// given: requests point at a loopback listener, and once they are answered
// a sentinel connection is made. Connections are accepted in arrival order,
// so anything the service had opened would be accepted before the sentinel.
func TestNeverConnects(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	target := "http://" + ln.Addr().String()

	c := newAPIClient(t, New(testConfig))
	requests := []struct{ path, body string }{
		{"/check-request", `{"request":{"method":"POST","url":"` + target + `/orders","body":{"a":1}},"schema":{"type":"object"}}`},
		{"/check-request", `{"request":{"method":"GET","url":"` + target + `/","headers":{"Host":"x"}},"schema":{}}`},
		{"/v0.2/preflight/tool-call", `{"runId":"r","stepId":"s","tool":{"provider":"browse","operation":"fetch","request":{"url":"` + target + `/page"},"estimatedExternalCostUsd":0.01},"budget":{"remainingUsd":1}}`},
		{"/v0.2/preflight/tool-call", `{"runId":"r","stepId":"s","tool":{"provider":"browse","operation":"browse:fetch","request":{"url":"` + target + `/page"},"estimatedExternalCostUsd":0.01},"budget":{"remainingUsd":1},"task":{"goalHash":"g"},"capabilities":{"canReusePriorResult":true,"canReduceScope":true},"freshnessTtlSeconds":5,"history":[{"toolCallId":"c","fingerprint":"00","outcome":"success","resultReference":"` + target + `/r","ageSeconds":1,"goalHash":"g"}]}`},
	}
	for _, r := range requests {
		if x := c.do("POST", r.path, []byte(r.body)); x.Status != 200 {
			t.Fatalf("POST %s: %d %s", r.path, x.Status, x.Body)
		}
	}

	if seen := connectionsBefore(t, ln); seen != 0 {
		t.Errorf("the service opened %d connection(s) to a URL it was given; want 0", seen)
	}
}

// connectionsBefore dials ln once more as a sentinel and returns how many
// connections ln had accepted before the sentinel's: the ones the service
// under test opened.
func connectionsBefore(t *testing.T, ln net.Listener) int {
	t.Helper()
	sentinel, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer sentinel.Close()
	for seen := 0; ; seen++ {
		conn, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		isSentinel := conn.RemoteAddr().String() == sentinel.LocalAddr().String()
		conn.Close()
		if isSentinel {
			return seen
		}
	}
}
