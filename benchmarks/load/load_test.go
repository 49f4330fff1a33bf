package load

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestBareAnswerIs300Bytes(t *testing.T) {
	if got := len(BareAnswer); got != 300 {
		t.Fatalf("len(BareAnswer) = %d, want 300", got)
	}
}

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		name string
		lat  []time.Duration
		p    float64
		want time.Duration
	}{
		{"empty", nil, 50, 0},
		{"single", ms(7), 99, 7 * time.Millisecond},
		{"median of four", ms(4, 1, 3, 2), 50, 2 * time.Millisecond},
		{"p99 of hundred", ms(seq(100)...), 99, 99 * time.Millisecond},
		{"p100", ms(5, 9, 1), 100, 9 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Percentile(tt.lat, tt.p)); diff != "" {
				t.Errorf("Percentile (-want +got):\n%s", diff)
			}
		})
	}
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

func TestDriveBareHandler(t *testing.T) {
	l, err := Listen(BareHandler())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	st, err := Drive(context.Background(), l.Addr, "/any", []byte(`{"a":[1,2,3]}`),
		Config{Clients: 2, Duration: 5 * time.Second, MaxRequests: 50})
	if err != nil {
		t.Fatal(err)
	}
	if st.Requests != 50 || len(st.Latencies) != 50 {
		t.Errorf("requests = %d, latencies = %d, want 50 each (the count bound)", st.Requests, len(st.Latencies))
	}
}

func TestDriveReportsNon200(t *testing.T) {
	l, err := Listen(BareHandler())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = Drive(context.Background(), l.Addr, "/", []byte(`not json`), Config{Clients: 1, MaxRequests: 5})
	if err == nil {
		t.Fatal("Drive accepted 400 answers")
	}
}

func TestDriveRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"192.0.2.1:80", "example.com:80", "localhost"} {
		if _, err := Drive(context.Background(), addr, "/", nil, Config{}); err == nil {
			t.Errorf("Drive(%q) did not refuse", addr)
		}
	}
}
