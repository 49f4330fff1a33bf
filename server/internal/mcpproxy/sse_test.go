package mcpproxy

import (
	"bytes"
	"errors"
	"io"
	"iter"
	"strings"
	"testing"
	"testing/iotest"
	_ "unsafe" // for go:linkname

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sdkScanEvents is the MCP Go SDK's own event scanner, which its client
// transport reads streams with: sseReader is checked against it by
// FuzzSSEReader. It is unexported; a version of the SDK that renames it
// fails this test's build at link time, which says where to look.
//
//go:linkname sdkScanEvents github.com/modelcontextprotocol/go-sdk/mcp.scanEventsLimited
func sdkScanEvents(r io.Reader, maxEventSize int) iter.Seq2[mcp.Event, error]

// readEvent is an event as the tests compare it.
type readEvent struct {
	Name, ID, Retry, Data string
}

// readAll reads stream with an sseReader bounded by max, returning its
// events and the error that ended it (nil for io.EOF).
func readAll(r io.Reader, max int64) ([]readEvent, error) {
	var sr sseReader
	sr.reset(r, max)
	var evs []readEvent
	for {
		ev, err := sr.next()
		if err == io.EOF {
			return evs, nil
		}
		if err != nil {
			return evs, err
		}
		evs = append(evs, readEvent{string(ev.name), string(ev.id), string(ev.retry), string(ev.data)})
	}
}

func TestSSEReader(t *testing.T) {
	long := strings.Repeat("x", 10000) // past bufio's 4096
	msg := func(data string) readEvent { return readEvent{Data: data} }
	for _, c := range []struct {
		name, stream string
		max          int64
		want         []readEvent
		err          string // a part of the error's text; "" for none
	}{
		{name: "empty stream", stream: ""},
		{name: "one event", stream: "data: {}\n\n", want: []readEvent{msg("{}")}},
		{name: "every field", stream: "event: message\nid: 7\nretry: 1500\ndata: {}\n\n",
			want: []readEvent{{Name: "message", ID: "7", Retry: "1500", Data: "{}"}}},
		{name: "the last of a field wins", stream: "event: a\nevent: b\nid: 1\nid: 2\nretry: 1\nretry: 2\ndata: x\n\n",
			want: []readEvent{{Name: "b", ID: "2", Retry: "2", Data: "x"}}},
		{name: "an empty id is the event's", stream: "id: 1\ndata: a\n\nid:\ndata: b\n\n",
			want: []readEvent{{ID: "1", Data: "a"}, msg("b")}},
		{name: "fields are per event", stream: "event: progress\nid: 1\ndata: a\n\ndata: b\n\n",
			want: []readEvent{{Name: "progress", ID: "1", Data: "a"}, msg("b")}},
		{name: "multi-line data", stream: "data: a\ndata: b\ndata:\ndata: c\n\n", want: []readEvent{msg("a\nb\n\nc")}},
		{name: "data without space", stream: "data:x\n\n", want: []readEvent{msg("x")}},
		{name: "values trimmed both ends", stream: "data:   x \t \nevent: \tmessage  \n\n",
			want: []readEvent{{Name: "message", Data: "x"}}},
		{name: "colon in the value", stream: "data: {\"a\":\"b:c\"}\n\n", want: []readEvent{msg(`{"a":"b:c"}`)}},
		{name: "comments", stream: ": hello\n:\ndata: a\n: between\ndata: b\n\n:ping\n\n", want: []readEvent{msg("a\nb")}},
		{name: "unknown fields", stream: "foo: bar\nDATA: no\ndata : no\ndata: yes\n\n", want: []readEvent{msg("yes")}},
		{name: "CRLF", stream: "event: message\r\ndata: a\r\n\r\ndata: b\r\n\r\n",
			want: []readEvent{{Name: "message", Data: "a"}, msg("b")}},
		{name: "CRs before LF dropped", stream: "data: a\r\r\n\r\r\ndata: b\n\n", want: []readEvent{msg("a"), msg("b")}},
		{name: "lone CR is no line end", stream: "data: a\rdata: b\r\r", want: []readEvent{msg("a\rdata: b")}},
		{name: "lone CR inside a name", stream: "event: a\revent: b\ndata: x\n\n",
			want: []readEvent{{Name: "a\revent: b", Data: "x"}}},
		{name: "blank lines between events", stream: "\n\n\ndata: a\n\n\n\ndata: b\n\n", want: []readEvent{msg("a"), msg("b")}},
		{name: "event without data", stream: "event: ping\n\nid: 3\n\nretry: 10\n\n",
			want: []readEvent{{Name: "ping"}, {ID: "3"}, {Retry: "10"}}},
		{name: "empty fields make no event", stream: "event:\nid:\nretry:\n\ndata: a\n\n", want: []readEvent{msg("a")}},
		{name: "empty data makes no event", stream: "data:\n\n", want: nil},
		{name: "two empty data lines", stream: "data:\ndata:\n\n", want: []readEvent{msg("\n")}},
		{name: "empty data with an id", stream: "id: 9\ndata:\n\n", want: []readEvent{{ID: "9"}}},
		{name: "long line", stream: "data: " + long + "\n\n", want: []readEvent{msg(long)}},
		{name: "long lines one after another", stream: "data: " + long + "\ndata: " + long[:5000] + "\n\ndata: " + long + "\n\n",
			want: []readEvent{msg(long + "\n" + long[:5000]), msg(long)}},
		{name: "long comment", stream: ":" + long + "\ndata: a\n\n", want: []readEvent{msg("a")}},
		{name: "ends mid-event", stream: "data: a\n\ndata: b", want: []readEvent{msg("a"), msg("b")}},
		{name: "ends after a field", stream: "data: a\ndata: b\n", want: []readEvent{msg("a\nb")}},
		{name: "ends on a comment", stream: "data: a\n: bye", want: []readEvent{msg("a")}},
		{name: "byte order mark kept", stream: "\ufeffdata: a\n\ndata: b\n\n", want: []readEvent{msg("b")}},
		{name: "NUL in an id", stream: "id: a\x00b\ndata: x\n\n", want: []readEvent{{ID: "a\x00b", Data: "x"}}},
		{name: "line without colon", stream: "data: a\n\ndata\n\ndata: b\n\n", want: []readEvent{msg("a")},
			err: `malformed event: malformed line in SSE stream: "data"`},
		{name: "line without colon at the end", stream: "data: a\nevent", err: "malformed line"},
		{name: "within the bound", stream: "data: 12\n\ndata: 34\n\n", max: 10, want: []readEvent{msg("12"), msg("34")}},
		{name: "an event past the bound", stream: "data: 1\ndata: 2\n\n", max: 15, err: "SSE event exceeded 15 bytes without terminating"},
		{name: "a line past the bound", stream: "data: " + long + "\n\n", max: 100, err: "exceeded 100 bytes"},
		{name: "the blank line counts", stream: "data: 12\n\n", max: 9, err: "exceeded 9 bytes"},
		{name: "blank lines count toward no event", stream: "data: 1\n\n\n\n\ndata: 2\n\n", max: 9, want: []readEvent{msg("1"), msg("2")}},
		{name: "comments count", stream: ": 0123456789\ndata: 1\n\n", max: 15, err: "exceeded 15 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, split := range []bool{false, true} {
				var r io.Reader = strings.NewReader(c.stream)
				if split {
					r = iotest.OneByteReader(r) // line ends and fields torn across reads
				}
				got, err := readAll(r, c.max)
				if diff := cmp.Diff(c.want, got); diff != "" {
					t.Errorf("one byte a read %v: events (-want +got):\n%s", split, diff)
				}
				switch {
				case c.err == "" && err != nil:
					t.Errorf("one byte a read %v: error %v, want none", split, err)
				case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
					t.Errorf("one byte a read %v: error %v, want one saying %q", split, err, c.err)
				}
			}
		})
	}
}

// TestSSEReaderErrors checks what the errors that end a stream are, and
// that they stay.
func TestSSEReaderErrors(t *testing.T) {
	broken := errors.New("connection reset")
	for _, c := range []struct {
		name     string
		r        io.Reader
		max      int64
		want     []readEvent
		is       error
		tooLarge bool
	}{
		{name: "read error mid-event discards it", r: io.MultiReader(strings.NewReader("data: a\n\ndata: b\n"), iotest.ErrReader(broken)),
			want: []readEvent{{Data: "a"}}, is: broken},
		{name: "read error mid-line", r: io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(broken)),
			want: []readEvent{{Data: "a"}}, is: broken},
		{name: "past the bound is errResultTooLarge", r: strings.NewReader("data: " + strings.Repeat("y", 50) + "\n\n"), max: 20,
			is: errResultTooLarge, tooLarge: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var sr sseReader
			sr.reset(c.r, c.max)
			var got []readEvent
			var err error
			for {
				var ev sseEvent
				if ev, err = sr.next(); err != nil {
					break
				}
				got = append(got, readEvent{string(ev.name), string(ev.id), string(ev.retry), string(ev.data)})
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if !errors.Is(err, c.is) {
				t.Errorf("error %v, want %v", err, c.is)
			}
			var se *sseError
			if errors.As(err, &se) != c.tooLarge {
				t.Errorf("error %v: an *sseError %v, want %v", err, !c.tooLarge, c.tooLarge)
			}
			if _, again := sr.next(); again != err {
				t.Errorf("next after %v: %v, want the same error", err, again)
			}
		})
	}
}

// TestSSEReaderReset checks that a reader reset onto a new stream (a
// resumed one) starts afresh: no event, field or bound of the old one.
func TestSSEReaderReset(t *testing.T) {
	var sr sseReader
	sr.reset(strings.NewReader("event: a\nid: 1\ndata: "+strings.Repeat("z", 9000)+"\ndata"), 0)
	if _, err := sr.next(); err == nil {
		t.Fatal("no error for a line without colon")
	}
	sr.reset(strings.NewReader("data: b\n\n"), 20)
	ev, err := sr.next()
	if err != nil || string(ev.data) != "b" || len(ev.name) != 0 || len(ev.id) != 0 {
		t.Fatalf("after reset: %q %q %q, %v; want only data b", ev.name, ev.id, ev.data, err)
	}
	if _, err := sr.next(); err != io.EOF {
		t.Fatalf("after the event: %v, want io.EOF", err)
	}
}

// TestSSEReaderDataIsKept checks that an event's data stays as it was
// after later events are read (the caller may keep it in a message).
func TestSSEReaderDataIsKept(t *testing.T) {
	var sr sseReader
	sr.reset(strings.NewReader("data: first\n\ndata: second\n\n"), 0)
	a, _ := sr.next()
	first := a.data
	if _, err := sr.next(); err != nil {
		t.Fatal(err)
	}
	if string(first) != "first" {
		t.Errorf("the first event's data became %q", first)
	}
}

// FuzzSSEReader reads arbitrary streams with sseReader and with the SDK's
// own scanner, which its client transport reads them with: wherever the
// SDK reads a stream without error, sseReader must return the same
// events and no error; where the SDK fails, sseReader must fail as well
// after the same events.
func FuzzSSEReader(f *testing.F) {
	for _, s := range []string{
		"data: {}\n\n",
		"event: message\r\nid: 1\r\nretry: 10\r\ndata: a\r\ndata: b\r\n\r\n",
		": comment\n\ndata:x\n\nevent:\n\n",
		"data: a\rdata: b\r\r\n",
		"\ufeffdata: a\n\n",
		"data\n\n",
		"data:\ndata:\n\nid:\n\n",
		"data: " + strings.Repeat("x", 5000) + "\n\n",
		"id: 1\ndata: a",
	} {
		f.Add([]byte(s), uint16(0))
		f.Add([]byte(s), uint16(12))
	}
	f.Fuzz(func(t *testing.T, stream []byte, max uint16) {
		var want []readEvent
		var wantErr error
		for ev, err := range sdkScanEvents(bytes.NewReader(stream), int(max)) {
			if err != nil {
				wantErr = err
				break
			}
			want = append(want, readEvent{ev.Name, ev.ID, ev.Retry, string(ev.Data)})
		}
		got, err := readAll(bytes.NewReader(stream), int64(max))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%q bounded by %d: events (-SDK +sseReader):\n%s", stream, max, diff)
		}
		switch {
		case wantErr == nil && err != nil:
			t.Fatalf("%q bounded by %d: sseReader fails (%v), the SDK does not", stream, max, err)
		case wantErr != nil && err == nil:
			t.Fatalf("%q bounded by %d: the SDK fails (%v), sseReader does not", stream, max, wantErr)
		case wantErr != nil && wantErr.Error() != err.Error():
			t.Fatalf("%q bounded by %d: sseReader's error %q, the SDK's %q", stream, max, err, wantErr)
		}
	})
}

// BenchmarkSSEReader reads a stream of events such as an upstream's call
// stream carries (a name, an id, one data line; every tenth event with a
// comment and a data line longer than the read buffer): one allocation
// per event, its data, which the caller keeps.
func BenchmarkSSEReader(b *testing.B) {
	var stream bytes.Buffer
	const events = 100
	for i := range events {
		if i%10 == 0 {
			stream.WriteString(": keep-alive\n")
			stream.WriteString("data: " + strings.Repeat("p", 5000) + "\n")
		}
		stream.WriteString("event: message\nid: 0_" + strings.Repeat("1", i%3+1) + "\n")
		stream.WriteString(`data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}` + "\n\n")
	}
	r := bytes.NewReader(stream.Bytes())
	var sr sseReader
	b.SetBytes(int64(stream.Len()))
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(stream.Bytes())
		sr.reset(r, 1<<20)
		n := 0
		for {
			_, err := sr.next()
			if err != nil {
				break
			}
			n++
		}
		if n != events {
			b.Fatalf("%d events, want %d", n, events)
		}
	}
}
