package preflight

import (
	"slices"
	"strconv"
	"strings"
)

// frame is one step of a path into a document: a member name, or an array
// index when index >= 0; nil is the document itself. Walks keep their
// frames in their own stack frames, linked to their parents, so that
// visiting a value costs no allocation and no pointer write to the heap;
// the JSON Pointer is built only for a failure.
type frame struct {
	up    *frame
	name  string
	index int
}

// framePointer returns the JSON Pointer of the value at f below base.
func framePointer(base string, f *frame) string {
	var buf [128]byte
	return string(appendFramePointer(buf[:0], base, f))
}

// appendFramePointer appends the JSON Pointer of the value at f below base
// to dst. It writes the tokens back to front into room sized first,
// without collecting the frames' names anywhere (which would make the
// frames escape to the heap).
func appendFramePointer(dst []byte, base string, f *frame) []byte {
	var num [20]byte
	n := len(base)
	for g := f; g != nil; g = g.up {
		n++ // '/'
		if g.index >= 0 {
			n += len(strconv.AppendInt(num[:0], int64(g.index), 10))
			continue
		}
		n += len(g.name) + strings.Count(g.name, "~") + strings.Count(g.name, "/")
	}
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	b := dst[start:]
	at := n
	for g := f; g != nil; g = g.up {
		if g.index >= 0 {
			digits := strconv.AppendInt(num[:0], int64(g.index), 10)
			at -= len(digits)
			copy(b[at:], digits)
		} else {
			for i := len(g.name) - 1; i >= 0; i-- {
				switch c := g.name[i]; c {
				case '~':
					at -= 2
					b[at], b[at+1] = '~', '0'
				case '/':
					at -= 2
					b[at], b[at+1] = '~', '1'
				default:
					at--
					b[at] = c
				}
			}
		}
		at--
		b[at] = '/'
	}
	copy(b, base)
	return dst
}
