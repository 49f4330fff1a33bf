package server

import (
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// TestRequestID: a sane incoming X-Request-Id is echoed; a missing, empty,
// over-long or unsafe one is replaced by a fresh 32-hex-digit id; every
// response carries one, errors included.
func TestRequestID(t *testing.T) {
	h := New(testConfig)
	generated := regexp.MustCompile(`^[0-9a-f]{32}$`)
	tests := []struct {
		name, path, incoming string
		keep                 bool
	}{
		{"sane", "/health", "req-42_a.b:c+d/e=", true},
		{"uuid", "/health", "3f1c2a4e-9d7b-4c1e-8a2f-5b6c7d8e9f00", true},
		{"at the length limit", "/health", strings.Repeat("a", 128), true},
		{"absent", "/health", "", false},
		{"too long", "/health", strings.Repeat("a", 129), false},
		{"space", "/health", "two words", false},
		{"log injection", "/health", "x\"}\n{\"evil\":1", false},
		{"non-ASCII", "/health", "ünïcode", false},
		{"on a 404", "/nowhere", "keep-me", true},
	}
	seen := map[string]bool{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", tc.path, nil)
			if tc.incoming != "" {
				req.Header.Set("X-Request-Id", tc.incoming)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			got := w.Header().Get("X-Request-Id")
			switch {
			case tc.keep && got != tc.incoming:
				t.Errorf("X-Request-Id %q, want the incoming %q", got, tc.incoming)
			case !tc.keep && !generated.MatchString(got):
				t.Errorf("X-Request-Id %q, want a generated 32-hex-digit id", got)
			case !tc.keep && seen[got]:
				t.Errorf("generated id %q repeated", got)
			}
			seen[got] = true
		})
	}
}
