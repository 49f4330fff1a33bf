package main

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
)

// FuzzFramingAgainstNetHTTP holds the scanner to net/http itself, split
// anywhere: whenever net/http, reading a stream of requests as a server
// does (each body read to its end, the CR and LF bytes after a POST
// skipped), reads a request whose header section names both
// Content-Length and Transfer-Encoding, the scanner has tainted the
// connection. (The scanner may taint more: where it cannot follow the
// framing it reads every line as a header line.) The seeds are requests of
// every framing, well and badly formed, some with bodies that read like
// header sections.
func FuzzFramingAgainstNetHTTP(f *testing.F) {
	const smuggled = "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
	for _, first := range []string{
		"GET /x HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 45\r\n\r\ncontent-length: 1\ntransfer-encoding: chunked\n",
		"POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;e=1\r\nhello\r\n0\r\nT: 1\r\n\r\n",
		"POST /x HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\n{}",
	} {
		f.Add(first+smuggled, uint16(len(first)/2), uint16(len(first)+9))
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		f.Add(framingSeed(r, false)+framingSeed(r, true), uint16(r.IntN(300)), uint16(r.IntN(300)))
	}
	f.Fuzz(func(t *testing.T, data string, a, b uint16) {
		s, _, _ := scanSplit(data, a, b)
		if n, both := netHTTPReadsBoth(data); both && !s.tainted.Load() {
			t.Fatalf("net/http reads request %d with both Content-Length and Transfer-Encoding; the scanner did not taint: %q", n, data)
		}
	})
}

// netHTTPReadsBoth reports whether net/http, serving data, reads a
// request whose header section names both fields, and which one.
func netHTTPReadsBoth(data string) (int, bool) {
	src := &readCounter{r: strings.NewReader(data)}
	br := bufio.NewReader(src)
	afterPOST := false
	for n := 0; ; n++ {
		if afterPOST { // net/http skips up to 4 CR and LF bytes after a POST's body
			peek, _ := br.Peek(4)
			k := 0
			for k < len(peek) && (peek[k] == '\r' || peek[k] == '\n') {
				k++
			}
			br.Discard(k)
		}
		start := src.n - br.Buffered()
		req, err := http.ReadRequest(br)
		if err != nil {
			return n, false
		}
		if namesBoth(data[start : src.n-br.Buffered()]) {
			return n, true
		}
		if _, err := io.Copy(io.Discard, req.Body); err != nil || req.Close || req.ProtoMajor != 1 {
			return n, false
		}
		afterPOST = req.Method == http.MethodPost
	}
}

// namesBoth reports whether a request's header section (its request line
// first) has a Content-Length and a Transfer-Encoding field.
func namesBoth(head string) bool {
	var cl, te bool
	for _, line := range strings.Split(head, "\n")[1:] {
		name, _, ok := strings.Cut(line, ":")
		cl = cl || ok && strings.EqualFold(name, "content-length")
		te = te || ok && strings.EqualFold(name, "transfer-encoding")
	}
	return cl && te
}

type readCounter struct {
	r io.Reader
	n int
}

func (c *readCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// framingSeed writes one request: any method and version (some that
// net/http refuses), CR LF or bare LF line ends, a body framed by a
// Content-Length (right, wrong, odd spellings, twice), by chunks (odd
// sizes, extensions, trailers), folded or by nothing; with both fields
// when smuggle and by chance.
func framingSeed(r *rand.Rand, smuggle bool) string {
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	eol := pick("\r\n", "\r\n", "\n")
	var b strings.Builder
	b.WriteString(pick("", "", "", "", "\r\n", "\n", "\r\r\n"))
	fmt.Fprintf(&b, "%s /x %s%sHost: x%s", pick("POST", "GET", "PUT"), pick("HTTP/1.1", "HTTP/1.1", "HTTP/1.1", "HTTP/1.0", "http/1.0", "HTTP/0.9", "HTTP/2.0"), eol, eol)
	body := pick("", "{}", "content-length: 1\r\ntransfer-encoding: chunked\r\n", "hi\r\n\r\nPOST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n")
	framing := r.IntN(4)
	switch framing {
	case 1: // Content-Length
		n := max(len(body)+[]int{0, 0, 1, -1, 5}[r.IntN(5)], 0)
		fmt.Fprintf(&b, "%s:%s%s", pick("Content-Length", "content-length"), pick(" ", "", "\t"), pick(fmt.Sprint(n), fmt.Sprintf("0%d", n), "+"+fmt.Sprint(n)))
		b.WriteString(eol)
		if r.IntN(6) == 0 {
			fmt.Fprintf(&b, "Content-Length: %d%s", n+r.IntN(2), eol)
		}
	case 2: // chunked
		fmt.Fprintf(&b, "%s:%s%s", pick("Transfer-Encoding", "transfer-encoding"), pick(" chunked", " Chunked", " chunked ", " gzip", " chunked, chunked"), eol)
	case 3: // folded or other
		b.WriteString(pick("Content-Length:"+eol+" 5", "Transfer-Encoding:"+eol+" chunked", "X: y") + eol)
	}
	if smuggle && r.IntN(2) == 0 {
		b.WriteString("Content-Length: 3" + eol + "Transfer-Encoding: chunked" + eol)
	}
	b.WriteString(pick("\r\n", "\r\n", "\n"))
	if framing != 2 {
		b.WriteString(body)
		return b.String()
	}
	for k := r.IntN(3); k > 0; k-- {
		c := pick("abc", body, "x")
		fmt.Fprintf(&b, "%s%s%s%s", pick(fmt.Sprintf("%x", len(c)), fmt.Sprintf("%X;e=1", len(c)), fmt.Sprintf("%x ", len(c)), fmt.Sprintf("%x", len(c)+1)), pick("\r\n", "\r\n", "\n"), c, pick("\r\n", "\r\n", "\n", ""))
	}
	b.WriteString(pick("0\r\n", "0;x\r\n", "0\n"))
	b.WriteString(pick("", "", "T: 1\r\n", "Content-Length: 1\r\nTransfer-Encoding: chunked\r\n"))
	b.WriteString(pick("\r\n", "\r\n", "\n"))
	return b.String()
}
