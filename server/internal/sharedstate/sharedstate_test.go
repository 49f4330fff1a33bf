package sharedstate

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// TestOpenErrors: a store that cannot be opened is an error that names
// --store and never contains the URL's password.
func TestOpenErrors(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String() // nothing listens there once closed
	l.Close()
	tests := []struct{ url, want string }{
		{"redis://u:s3cret-pw@" + closed + "/0", "--store redis://u:xxxxx@" + closed + "/0: "},
		{"redis://u:s3cret-pw@" + closed + "/notanumber", "--store redis://u:xxxxx@" + closed + "/notanumber: "},
		{"postgres://u:s3cret-pw@" + closed + "/db?connect_timeout=2", "--store postgres://u:xxxxx@" + closed + "/db?connect_timeout=2: "},
		{"postgres://u:s3cret-pw@" + closed + "/db?sslmode=bogus", "--store postgres://u:xxxxx@"},
		{"redis+cluster://u:s3cret-pw@" + closed + "?addr=" + closed, "--store redis+cluster://u:xxxxx@" + closed + "?addr=" + closed + ": "},
		{"redis+cluster://u:s3cret-pw@" + closed + "?bogus=1", "--store redis+cluster://u:xxxxx@" + closed + "?bogus=1: "},
		{"rediss+cluster://u:s3cret-pw@" + closed, "--store rediss+cluster://u:xxxxx@" + closed + ": "},
		{"ftp://u:s3cret-pw@host/x", `unknown scheme "ftp"`},
		{"u:s3cret-pw@host", "--store: the value is not a URL with a host"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s, err := Open(ctx, tt.url, time.Hour)
			if err == nil {
				s.Close()
				t.Fatal("opened")
			}
			t.Log(err)
			if !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "s3cret-pw") {
				t.Fatalf("error %q: want one containing %q and no password", err, tt.want)
			}
		})
	}
}

// TestScopeName: scope names are bounded and safe whatever the principal
// and run hold, and no two (principal, run) pairs share one.
func TestScopeName(t *testing.T) {
	pairs := [][2]string{{"alice", "run:r1"}, {"alice", "run:r2"}, {"bob", "run:r1"}, {"", ""}, {"alice", ""},
		{"ali", "cerun:r1"}, {"alice\x00", "run:r1"}, {strings.Repeat("{", 5000), "run:}"}}
	seen := map[string][2]string{}
	for _, p := range pairs {
		n := ScopeName(p[0], p[1])
		if len(n) != 67 || strings.ContainsAny(n, "{}: ") {
			t.Errorf("ScopeName(%q, %q) = %q: want 67 bytes without braces, colons or spaces", p[0], p[1], n)
		}
		if q, ok := seen[n]; ok {
			t.Errorf("%q and %q share the scope %s", p, q, n)
		}
		seen[n] = p
	}
}
