package preflight

import (
	"net/url"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentpreflight/preflight/internal/clip"
	"github.com/agentpreflight/preflight/strictjson"
)

// maxCheckDepth bounds the nesting of a check-request document. The spec
// sets no limit there; this one keeps recursion bounded, and stays well
// below the 1,000 levels the MCP SDK's JSON-RPC decoder accepts for a whole
// message, so /mcp and HTTP agree.
const maxCheckDepth = 512

// maxCheckErrors is how many validation errors a result lists.
const maxCheckErrors = 100

var (
	checkTopMembers     = []string{"request", "schema", "economics"}
	checkRequestMembers = []string{"method", "url", "headers", "query", "body"}
	economicsMembers    = []string{"downstreamCostUsd", "billsOnInvalidRequest", "retryCostUsd",
		"priorInvalidProbability", "preflightPriceUsd", "budgetRemainingUsd"}
)

// DecodeCheckRequest parses and checks the body of POST /check-request. It
// reports every broken input rule at once in an *Error: malformed JSON
// (invalid_json), unknown or ill-typed members (invalid_request), and a
// schema that is too large, malformed or uses keywords outside the subset.
// Decoding does the whole check (validation, warnings, economics and
// hash), so its cost is the check's, within the work ceiling Check
// describes, and the returned request keeps its outcome: Check of an
// unchanged request only copies it out. A check over that ceiling is not
// a decoding error: Check reports it. The request's byte fields are its
// own copies and may be edited, in place or not: Check notices any edit
// and checks the edited request as if it were sent anew.
// A document over 67,108,861 bytes (64 MiB) is refused with
// limit_exceeded (max_nodes); the server's body limit is far below it.
func DecodeCheckRequest(data []byte) (*CheckRequest, error) {
	root, spare, perr := parseObject(data, strictjson.Limits{MaxDepth: maxCheckDepth}, true, strictjson.ParseScratch)
	if perr != nil {
		return nil, perr
	}
	defer root.Release() // nothing decoded keeps a Value: see decoded.go
	var d decoder
	both := &struct { // one allocation for the request and what it keeps of decoding
		req CheckRequest
		p   parsedCheck
	}{}
	req, p := &both.req, &both.p
	var t checkTree
	var top [3]strictjson.Value // checkTopMembers
	d.fields(root, "", checkTopMembers, top[:])

	if rv := d.need(top[0], "", "request"); rv.IsValid() {
		t.parts = d.proposedRequest(rv, "/request", &req.Request)
	}
	if sv := d.need(top[1], "", "schema"); sv.IsValid() {
		t.rawSch = sv
		if n := sv.End() - sv.Start(); n > MaxSchemaBytes {
			d.add("/schema", IssueSchemaTooLarge, "expected a schema of at most 32768 bytes, found "+strconv.Itoa(n))
		} else if s, serr := compileSchema(sv, "/schema"); serr != nil {
			d.issues = append(d.issues, serr.Details...)
		} else {
			t.schema = s
		}
	}
	if ev := top[2]; ev.IsValid() {
		req.Economics = d.economics(ev, "/economics")
	}
	if e := d.err(); e != nil {
		return nil, e
	}
	p.publish(req, &t, spare)
	p.err = t.check(req.Request.Method, req.Economics, &p.outcome)
	req.parsed = p
	return req, nil
}

// checkTree is the parsed form of a check request while it is decoded.
type checkTree struct {
	parts  requestParts
	schema *schema
	rawSch strictjson.Value
}

// requestParts are the members of a check's "request" object, each
// invalid when absent.
type requestParts struct{ method, url, headers, query, body strictjson.Value }

// proposedRequest decodes the proposed request v into out and returns its
// members. Query and Body are left to publish (see decoded.go).
func (d *decoder) proposedRequest(v strictjson.Value, path string, out *ProposedRequest) requestParts {
	var f [5]strictjson.Value // checkRequestMembers
	if !d.fields(v, path, checkRequestMembers, f[:]) {
		return requestParts{}
	}
	if m := d.need(f[0], path, "method"); m.IsValid() {
		if s, ok := d.str(m, memberPath{path, "method"}, 0); ok {
			if !isToken(s) {
				d.add(path+"/method", IssueInvalidMethod, "expected an HTTP method token such as \"POST\", found "+strconv.Quote(clip.String(s)))
			}
			out.Method = s
		}
	}
	if u := d.need(f[1], path, "url"); u.IsValid() {
		if s, ok := d.str(u, memberPath{path, "url"}, 0); ok {
			if msg := checkAbsoluteURL(s); msg != "" {
				d.add(path+"/url", IssueInvalidURL, msg)
			}
			out.URL = s
		}
	}
	if h := f[2]; h.IsValid() {
		if h.Kind() != strictjson.Object {
			d.add(path+"/headers", IssueType, "expected an object of header names to string values, found "+kindName(h))
		} else {
			out.Headers = make(map[string]string, h.Len())
			var local [8]string
			accepted := local[:0] // the names in out.Headers, in order
			for it := h.Iter(); it.Next(); {
				key, val := it.Key(), it.Value()
				if val.Kind() != strictjson.String {
					d.add(child(path+"/headers", key), IssueType, "expected a string header value, found "+kindName(val))
					continue
				}
				if first := sameHeader(accepted, key); first != "" {
					d.add(child(path+"/headers", key), IssueDuplicateHeader, "header "+strconv.Quote(clip.String(key))+" repeats "+strconv.Quote(clip.String(first))+" (header names are case-insensitive)")
					continue
				}
				out.Headers[key] = val.Str()
				accepted = append(accepted, key)
			}
		}
	}
	if q := f[3]; q.IsValid() && q.Kind() != strictjson.Object {
		d.add(path+"/query", IssueType, "expected an object, found "+kindName(q))
	}
	return requestParts{method: f[0], url: f[1], headers: f[2], query: f[3], body: f[4]}
}

func (d *decoder) economics(v strictjson.Value, path string) *CheckEconomics {
	var f [6]strictjson.Value // economicsMembers
	if !d.fields(v, path, economicsMembers, f[:]) {
		return nil
	}
	e := &CheckEconomics{}
	if m := d.need(f[0], path, "downstreamCostUsd"); m.IsValid() {
		e.DownstreamCostUSD, _ = d.amount(m, memberPath{path, "downstreamCostUsd"}, maxNumeric)
	}
	if m := d.need(f[1], path, "billsOnInvalidRequest"); m.IsValid() {
		e.BillsOnInvalidRequest = d.boolean(m, memberPath{path, "billsOnInvalidRequest"})
	}
	if m := d.need(f[2], path, "retryCostUsd"); m.IsValid() {
		e.RetryCostUSD, _ = d.amount(m, memberPath{path, "retryCostUsd"}, maxNumeric)
	}
	if m := f[3]; m.IsValid() {
		e.PriorInvalidProbability, _ = d.amount(m, memberPath{path, "priorInvalidProbability"}, "1")
	}
	if m := f[4]; m.IsValid() {
		e.PreflightPriceUSD, _ = d.amount(m, memberPath{path, "preflightPriceUsd"}, maxNumeric)
	}
	if m := f[5]; m.IsValid() {
		e.BudgetRemainingUSD, _ = d.amount(m, memberPath{path, "budgetRemainingUsd"}, maxNumeric)
	}
	return e
}

// sameHeader returns the name in names that equals name but for the case
// of ASCII letters (the case HTTP ignores), or "". Requests carry few
// headers, so a scan beats building a second map.
func sameHeader(names []string, name string) string {
	for _, k := range names {
		if equalFoldASCII(k, name) {
			return k
		}
	}
	return ""
}

// isToken reports whether s is an RFC 9110 token (a valid method name).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// checkAbsoluteURL returns "" when s is an absolute http or https URL with a
// host (and a port, if any, of 0 to 65535), and otherwise a message saying
// what was expected.
func checkAbsoluteURL(s string) string {
	if plainHTTPURL(s) {
		return "" // the common shape, accepted without building a url.URL
	}
	return parseAbsoluteURL(s)
}

// parseAbsoluteURL is checkAbsoluteURL by url.Parse and validPort alone.
func parseAbsoluteURL(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == 0x7f {
			return "expected an absolute http(s) URL, found one with a space or control character (encode it): " + strconv.Quote(clip.String(s))
		}
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "expected an absolute http(s) URL, found one that does not parse: " + strconv.Quote(clip.String(s))
	case u.Scheme != "http" && u.Scheme != "https":
		return "expected an absolute URL with scheme http or https, found " + strconv.Quote(clip.String(s))
	case u.Host == "" || u.Hostname() == "":
		return "expected an absolute http(s) URL with a host, found " + strconv.Quote(clip.String(s))
	case !validPort(u.Port()):
		return "expected an absolute http(s) URL with a port from 0 to 65535, found " + strconv.Quote(clip.String(s))
	}
	return ""
}

// validPort reports whether port, the text after a URL host's colon, is
// empty (RFC 3986 allows "https://a.example:/", meaning the default port)
// or digits whose value is at most 65535. Leading zeros are allowed, as in
// WHATWG URL: "00080" is port 80. url.Parse checks only that a port is
// digits.
func validPort(port string) bool {
	digits := strings.TrimLeft(port, "0")
	if len(digits) > 5 || strings.Trim(digits, "0123456789") != "" {
		return false
	}
	n, _ := strconv.Atoi(digits) // "" (no port, or all zeros) is 0
	return n <= 65535
}

// plainHTTPURL reports whether s is an http or https URL of the plainest
// shape: lower-case scheme, a host of letters, digits, dots and hyphens
// (with an optional port of 0 to 65535), no user info, and then only printable
// ASCII without '%'. Every such URL passes checkAbsoluteURL's url.Parse
// test (FuzzPlainHTTPURL checks that); anything else takes that test.
func plainHTTPURL(s string) bool {
	rest, ok := strings.CutPrefix(s, "https://")
	if !ok {
		if rest, ok = strings.CutPrefix(s, "http://"); !ok {
			return false
		}
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	host, tail := rest[:end], rest[end:]
	if name, port, hasPort := strings.Cut(host, ":"); hasPort {
		if port == "" || !validPort(port) {
			return false
		}
		host = name
	}
	if host == "" {
		return false
	}
	for i := 0; i < len(host); i++ {
		switch c := host[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '-':
		default:
			return false
		}
	}
	for i := 0; i < len(tail); i++ {
		if c := tail[i]; c <= ' ' || c >= 0x7f || c == '%' {
			return false
		}
	}
	return true
}

// Check validates req.Request.Body against req.Schema and, when
// req.Economics is set, adds proceed/abort advice. It never sends the
// request or fetches its URL.
//
// A request from DecodeCheckRequest gets the outcome worked out while it
// was decoded, in a copy of its own; the caller may change it. A
// request built in Go is first encoded and put through the same decoder, so
// both paths apply the same rules and report the same errors. Its strings
// must be UTF-8, as in JSON: a method, URL or header name or value that is
// not is refused with code invalid_json and an invalid_utf8 detail at its
// pointer, never repaired.
//
// Validation counts its work and stops at a fixed ceiling of 3,000,000
// steps: a step is a body value visited, an enum member compared, a byte of
// a string matched against a pattern, or a pattern instruction visited
// while the matcher builds a state it has not built before. A request
// that needs more gets no verdict but an *Error with code limit_exceeded
// and one detail, max_work, whose path is the schema's pattern or enum
// keyword that needed the work (or the body value reached). The ceiling
// keeps DecodeCheckRequest, which does the validating for a request it
// decodes, and Check of a request built in Go within tens of milliseconds
// of CPU for any request within the size limits, so a caller that checks
// untrusted schemas need not run its own timer. Compiling the schema's
// patterns, before validation, has bounds of its own: 3,000 program instructions per pattern, 30,000 per
// schema, and 60,000 character-class ranges per schema (a range or
// character in a class counts one, \p{L} about 680); a schema over them
// is refused with unsupported_pattern naming the pattern.
func Check(req *CheckRequest) (*CheckResult, error) {
	p, err := parsedFor(req)
	if err != nil {
		return nil, err
	}
	if p.err != nil {
		return nil, p.err.clone()
	}
	return p.outcome.clone(), nil
}

// checkOutcome is a CheckResult and its economics, in one allocation.
type checkOutcome struct {
	res  CheckResult
	econ EconomicsResult
}

// clone returns a copy of o's result that shares nothing the caller could
// change with o.
func (o *checkOutcome) clone() *CheckResult {
	c := &checkOutcome{res: o.res, econ: o.econ}
	ne := len(o.res.Errors)
	issues := append(append(make([]Issue, 0, ne+len(o.res.Warnings)), o.res.Errors...), o.res.Warnings...)
	c.res.Errors, c.res.Warnings = issues[:ne:ne], issues[ne:]
	if o.res.Economics != nil {
		c.res.Economics = &c.econ
	}
	return &c.res
}

// check works out the outcome of the decoded request into out: the body
// validated against the schema, the warnings, the economics and the
// request hash. method and econ are the request's, as decoded.
func (t *checkTree) check(method string, econ *CheckEconomics, out *checkOutcome) *Error {
	*out = checkOutcome{res: CheckResult{Errors: []Issue{}, Warnings: []Issue{}}}
	res := &out.res
	errs := issueList{max: maxCheckErrors}

	if !t.parts.body.IsValid() {
		if _, ok := t.rawSch.Get("type"); ok {
			errs.add(Issue{Path: "/request/body", Code: IssueRequired, Message: "the request has no body; the schema's type keyword requires one"})
		} else {
			res.Warnings = append(res.Warnings, Issue{Path: "/request/body", Code: IssueBodyAbsent, Message: "the request has no body; nothing was validated"})
		}
	} else {
		if err := t.schema.validateAt(t.parts.body, "/request/body", &errs, "/schema"); err != nil {
			return err
		}
	}
	if errs.issues != nil {
		res.Errors = errs.issues
	}
	res.Valid = len(res.Errors) == 0
	if errs.truncated {
		res.Warnings = append(res.Warnings, Issue{Path: "", Code: IssueErrorsTruncated,
			Message: "more than 100 validation errors; only the first 100 are listed"})
	}
	res.Warnings = append(res.Warnings, requestWarnings(t.parts.headers, method, t.parts.body.IsValid())...)

	if econ != nil {
		warn := checkEconomics(econ, res.Valid, &out.econ)
		res.Economics = &out.econ
		if warn != nil {
			res.Warnings = append(res.Warnings, *warn)
		}
	}
	hash, herr := requestHash(t)
	if herr != nil {
		return herr
	}
	res.RequestHash = hash
	return nil
}

// sensitiveHeaders are header names (lower case) that carry credentials.
var sensitiveHeaders = map[string]bool{
	"authorization": true, "proxy-authorization": true, "cookie": true, "set-cookie": true,
	"x-api-key": true, "api-key": true, "apikey": true, "x-auth-token": true, "x-access-token": true,
	"x-amz-security-token": true, "x-goog-api-key": true, "private-token": true, "x-csrf-token": true,
}

// sensitiveWords mark other credential-looking header names.
var sensitiveWords = []string{"api-key", "api_key", "apikey", "secret", "token", "password", "credential", "session",
	"signature", "subscription-key", "access-key", "private-key"}

// isSensitiveHeader reports whether the header name, in any case and with
// any white space around it, names a credential.
func isSensitiveHeader(name string) bool {
	name = strings.TrimSpace(name)
	var buf [64]byte
	if lower, ascii := appendLowerASCII(buf[:0], name); ascii {
		return isSensitiveLower(string(lower)) // does not escape: no allocation
	}
	return isSensitiveLower(strings.ToLower(name))
}

// appendLowerASCII appends s in lower case to dst when s is all ASCII, and
// otherwise returns dst unchanged and false: Unicode case mapping (the
// Kelvin sign lowers to 'k') is left to strings.ToLower.
func appendLowerASCII(dst []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return dst, false
		}
	}
	return appendFoldASCII(dst, s), true
}

// isSensitiveLower is isSensitiveHeader for a name already in lower case.
func isSensitiveLower(lower string) bool {
	if sensitiveHeaders[lower] {
		return true
	}
	for _, w := range sensitiveWords {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}

// requestWarnings lists the warnings about the proposed request itself:
// its headers (the parsed object, invalid when absent), method and body.
func requestWarnings(headers strictjson.Value, method string, hasBody bool) []Issue {
	var out []Issue
	if headers.IsValid() {
		var local [4]string
		names := local[:0]
		for it := headers.Iter(); it.Next(); {
			if name := it.Key(); isSensitiveHeader(name) {
				names = append(names, name)
			}
		}
		sort.Strings(names)
		for _, name := range names {
			out = append(out, Issue{Path: "/request/headers/" + strictjson.EscapePointerToken(name), Code: IssueSensitiveHeader,
				Message: "header " + strconv.Quote(clip.String(name)) + " carries credentials; do not send credentials to preflight"})
		}
	}
	if hasBody {
		if m := strings.ToUpper(method); m == "GET" || m == "HEAD" {
			out = append(out, Issue{Path: "/request/method", Code: IssueBodyWithGet,
				Message: m + " request carries a body; many servers ignore or reject it"})
		}
	}
	return out
}
