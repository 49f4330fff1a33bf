package mcpproxy

import (
	"bufio"
	"bytes"
	"io"
	"strconv"
)

// sseReader reads a Server-Sent Events stream from an upstream, one event
// at a time. All three readers of upstream streams use it: the direct
// path's call stream (readCall), the standalone stream (readEvents) and
// the stateless revision's call stream (awaitResponse).
//
// Its rules are those of the event scanner of the MCP Go SDK's client
// transport (v1.8.0), which reads the same upstreams on the proxy's other
// paths: a stream means the same on every path, and the direct path
// answers as the SDK's transport would. Where the SDK follows the WHATWG
// rules (HTML, "Interpreting an event stream"), so does sseReader:
//
//   - a line is a field, its name before the first ':' and its value
//     after; a line that starts with ':' is a comment and is skipped, and
//     so is a field other than event, id, retry and data;
//   - the values of an event's data fields are joined with "\n";
//   - an empty line ends the event; an event without a field, or whose
//     fields are all empty, is not returned;
//   - an event's name, id and retry are those of its last such field; an
//     event without a name is a "message" event (for the caller to decide).
//
// Where they differ it takes the SDK's rule, deliberately:
//
//   - a line ends at LF only, and every CR just before the LF is dropped
//     (WHATWG: CR, LF and CRLF all end a line; here a lone CR stays in the
//     line, and a stream whose lines end with CR alone is one line);
//   - a value is trimmed of white space at both ends, as bytes.TrimSpace
//     does (WHATWG: one space after the ':' is dropped, the rest kept);
//   - a non-empty line without ':' breaks the stream: next returns an
//     *sseError, the SDK's "malformed line in SSE stream" (WHATWG: a field
//     named by the whole line, with an empty value);
//   - the end of the stream ends the event in progress, which is returned
//     (WHATWG: it is discarded); a read error other than io.EOF discards
//     it, as in the SDK;
//   - a byte order mark at the start is not skipped: it belongs to the
//     first field's name, so that field is unknown (WHATWG skips it);
//   - an id is the event's own, with any bytes, NUL included (WHATWG:
//     an id with NUL is ignored, and an empty id clears the stream's last
//     event id, where the SDK's client keeps the last non-empty one);
//   - retry is returned as text, which callers parse as the SDK does,
//     strconv.ParseInt in base 10 (WHATWG: ASCII digits only).
//
// max bounds the bytes of one event, its lines with their line ends and
// the empty line that ends it, as the SDK's MaxEventSize does (0: none): once an event grows past it, next returns
// an *sseError that is errResultTooLarge, and nothing past the bound is
// buffered. The readers give it eventBound of the proxy's MaxResultBytes,
// above capBody's bound on a line.
type sseReader struct {
	br   bufio.Reader
	max  int64
	size int64 // the bytes of the event in progress
	long []byte
	// The values of the event's name, id and retry, end to end, and where
	// each is in it (a field's last value wins): one buffer for the three,
	// kept from event to event.
	fields          []byte
	name, id, retry span
	err             error // once set, the stream is over
}

// span is where a value is in sseReader.fields.
type span struct{ from, to int }

// sseEvent is one event of a stream. name, id and retry are valid until
// the next call of next; data is the caller's to keep (empty when the
// event had no data field, or only empty ones).
type sseEvent struct {
	name, id, retry, data []byte
}

// message reports whether ev carries a message, as the SDK's client reads
// a stream: an event with data, named message or not named at all. The
// callers skip the others.
func (ev sseEvent) message() bool {
	return len(ev.data) > 0 && (len(ev.name) == 0 || string(ev.name) == "message")
}

// sseError is a stream that breaks sseReader's rules; the SDK's client
// transport calls it a malformed event and fails its connection.
type sseError struct {
	msg      string
	tooLarge bool
}

func (e *sseError) Error() string { return "malformed event: " + e.msg }

// Is makes an event past the bound errResultTooLarge, capBody's error for
// a line past it.
func (e *sseError) Is(target error) bool { return e.tooLarge && target == errResultTooLarge }

// eventBound is the bound on an event of an upstream's stream, for a
// proxy whose MaxResultBytes is max: above capBody's bound on a line, so
// that a line past max is capBody's to answer.
func eventBound(max int64) int64 { return min(max+64<<10, 1<<40) }

// reset makes s read r from its start, with max as its bound.
func (s *sseReader) reset(r io.Reader, max int64) {
	s.br.Reset(r)
	s.max, s.size, s.err = max, 0, nil
}

// field records value as a field's, in f.
func (s *sseReader) field(f *span, value []byte) {
	if s.fields == nil {
		s.fields = make([]byte, 0, 32)
	}
	f.from = len(s.fields)
	s.fields = append(s.fields, value...)
	f.to = len(s.fields)
}

// next returns the stream's next event. At the end of the stream it
// returns io.EOF, or the error that ended it; after an error it returns
// that error again.
func (s *sseReader) next() (sseEvent, error) {
	if s.err != nil {
		return sseEvent{}, s.err
	}
	s.fields, s.name, s.id, s.retry = s.fields[:0], span{}, span{}, span{}
	var data []byte
	hasData := false // a data field came: the next value is joined with a newline
	for {
		line, err := s.line()
		if err != nil && err != io.EOF {
			s.err = err
			return sseEvent{}, err
		}
		s.size += int64(len(line))
		eof := err == io.EOF
		line = bytes.TrimRight(line, "\r\n")
		if len(line) > 0 {
			key, value, found := bytes.Cut(line, []byte{':'})
			if !found {
				s.err = &sseError{msg: "malformed line in SSE stream: " + strconv.Quote(string(line))}
				return sseEvent{}, s.err
			}
			value = bytes.TrimSpace(value)
			switch string(key) {
			case "event":
				s.field(&s.name, value)
			case "id":
				s.field(&s.id, value)
			case "retry":
				s.field(&s.retry, value)
			case "data":
				if hasData {
					data = append(data, '\n')
				}
				data = append(data, value...)
				hasData = true
			}
		} else {
			s.size = 0
		}
		if len(line) == 0 || eof {
			if eof {
				s.err = io.EOF
			}
			ev := sseEvent{name: s.fields[s.name.from:s.name.to], id: s.fields[s.id.from:s.id.to],
				retry: s.fields[s.retry.from:s.retry.to], data: data}
			if len(ev.name) > 0 || len(ev.id) > 0 || len(ev.retry) > 0 || len(ev.data) > 0 {
				return ev, nil
			}
			if eof {
				return sseEvent{}, io.EOF
			}
			hasData = false
		}
	}
}

// line reads the next line with its end, whole, or what the stream ends
// with; it fails once the event would grow past the bound.
func (s *sseReader) line() ([]byte, error) {
	line, err := s.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		// A line longer than the buffer: gathered in s.long, which is kept
		// for the next one.
		s.long = s.long[:0]
		for err == bufio.ErrBufferFull {
			if s.over(len(s.long) + len(line)) {
				return nil, s.tooLarge()
			}
			s.long = append(s.long, line...)
			line, err = s.br.ReadSlice('\n')
		}
		if s.over(len(s.long) + len(line)) {
			return nil, s.tooLarge()
		}
		line = append(s.long, line...)
		s.long = line
	} else if s.over(len(line)) {
		return nil, s.tooLarge()
	}
	return line, err
}

// over reports whether a line of n bytes takes the event past the bound.
func (s *sseReader) over(n int) bool { return s.max > 0 && s.size+int64(n) > s.max }

func (s *sseReader) tooLarge() error {
	return &sseError{msg: "SSE event exceeded " + strconv.FormatInt(s.max, 10) + " bytes without terminating", tooLarge: true}
}
