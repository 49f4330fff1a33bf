package anthropicguard

import (
	"bytes"
	"io"
	"slices"
	"testing"
)

// chunked reads b in pieces of n bytes (at least 1).
type chunked struct {
	b []byte
	n int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	k := min(len(p), c.n, len(c.b))
	copy(p, c.b[:k])
	c.b = c.b[k:]
	return k, nil
}

// tapped reads stream through an event tap in pieces of n bytes and
// returns what was read and the tool_use blocks the tap found.
func tapped(t *testing.T, stream []byte, n int) ([]byte, []toolUse) {
	g := &Guard{}
	tap := &eventTap{ReadCloser: io.NopCloser(&chunked{stream, max(1, n)}), g: g, drafts: map[int]*draft{}}
	got, err := io.ReadAll(tap)
	if err != nil {
		t.Fatal(err)
	}
	return got, g.uses.list
}

// FuzzEventTap: whatever a streamed response holds, the tap hands it to
// the runner unchanged, never panics, and finds the same tool_use blocks
// however the stream is split into reads.
func FuzzEventTap(f *testing.F) {
	f.Add([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n"+
		"data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"q\",\"input\":{}}}\n\n"+
		"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\":\"}}\n\n"+
		"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\" 1}\"}}\n\n"+
		"data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t2\",\"name\":\"r\",\"input\":{}}}\r\n\r\n"+
		"data: {\"type\":\"message_stop\"}\n\n"), 7)
	f.Add([]byte("data: {\"type\":\"message_stop\"}"), 1)
	f.Add([]byte("data:\n\ndata: [\n"), 3)
	f.Fuzz(func(t *testing.T, stream []byte, n int) {
		whole, want := tapped(t, stream, len(stream))
		got, uses := tapped(t, stream, n%64)
		if !bytes.Equal(whole, stream) || !bytes.Equal(got, stream) {
			t.Fatalf("the runner read %q / %q, want %q", whole, got, stream)
		}
		if !slices.Equal(uses, want) {
			t.Fatalf("split in reads of %d: %v, unsplit %v", n%64, uses, want)
		}
	})
}

// TestEventTapSeed: the first seed's stream yields its two blocks, the
// input gathered from its deltas, a block without deltas given {}.
func TestEventTapSeed(t *testing.T) {
	stream := []byte("data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"q\",\"input\":{}}}\n\n" +
		"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\":\"}}\n\n" +
		"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\" 1}\"}}\n\n" +
		"data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t2\",\"name\":\"r\",\"input\":{}}}\r\n\r\n" +
		"data: {\"type\":\"message_stop\"}\n\n")
	_, uses := tapped(t, stream, 5)
	want := []toolUse{{"t1", "q", `{"a":1}`}, {"t2", "r", "{}"}}
	if !slices.Equal(uses, want) {
		t.Fatalf("blocks %v, want %v", uses, want)
	}
}
