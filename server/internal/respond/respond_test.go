package respond

import (
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// TestContentLength: every answer's Content-Length is its length, whether
// the value is made, shared from an earlier answer or past the shared range.
func TestContentLength(t *testing.T) {
	for _, n := range []int{0, 1, 9, 99, 100, 349, 8191, 8192, 65536, 0, 349, 8191} {
		w := httptest.NewRecorder()
		WriteJSON(w, 200, []byte(strings.Repeat("x", n)))
		if got := w.Result().Header.Values("Content-Length"); len(got) != 1 || got[0] != strconv.Itoa(n) {
			t.Errorf("%d bytes: Content-Length %q", n, got)
		}
		if got := w.Body.Len(); got != n {
			t.Errorf("%d bytes: body of %d", n, got)
		}
	}
}
