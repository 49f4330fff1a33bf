package preflight

import (
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"encoding/json"

	"github.com/agentpreflight/preflight/internal/clip"
	"github.com/agentpreflight/preflight/internal/decimal"
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

// CheckJSON is [Check] of the request data holds, the body of
// POST /check-request, as it arrives: one strict parse, every input rule
// applied to what was parsed, then the check. It reports every broken input
// rule at once in an *Error: malformed JSON (invalid_json), unknown or
// ill-typed members (invalid_request), and a schema that is too large,
// malformed or uses keywords outside the subset. A document over
// 67,108,861 bytes (64 MiB) is refused with limit_exceeded (max_nodes);
// the server's body limit is far below it. A schema compiled before is
// taken from the cache of compiled schemas (see [SchemaCacheLimits]).
//
// CheckJSON(data) and Check of [DecodeCheckRequest](data) give the same
// result or the same error.
func CheckJSON(data []byte) (*CheckResult, error) {
	// The input and the copy of the document are the call's alone: the
	// result and any error are built of their own strings (FuzzCheckJSON
	// and the golden tests run with released copies overwritten), so both
	// go back to their pools when the call returns.
	in := checkInputs.Get().(*checkInput)
	doc := docCopies.Get().(*docCopy)
	defer func() {
		*in = checkInput{}
		checkInputs.Put(in)
		doc.release()
	}()
	var root strictjson.Value
	var perr *Error
	if own, hit, at := withoutCachedSchema(doc, data); hit != nil {
		// The schema is one the cache holds: the document is parsed with
		// {} in its place, and the cached tree stands for it, provided
		// the parser found the document's schema exactly there. Then the
		// parse of data would have read the schema's text (a complete
		// value) from there, and gone on as it did: the texts before and
		// after are the same. Otherwise data is parsed as it is.
		root, perr = parseOwnedObject(own, checkLimits, strictjson.ParseScratch)
		if perr == nil {
			if sv, ok := root.Get("schema"); ok && sv.Start() == at && sv.End() == at+2 {
				in.cached = hit
			} else {
				root.Release()
			}
		}
	}
	if in.cached == nil {
		root, perr = parseOwnedObject(doc.copy(data), checkLimits, strictjson.ParseScratch)
	}
	if perr != nil {
		return nil, perr
	}
	defer root.Release() // the result holds no Value of the tree
	var d decoder
	d.checkRequest(root, in, nil)
	if e := d.err(); e != nil {
		return nil, e
	}
	return in.check()
}

// checkInputs recycles CheckJSON's inputs.
var checkInputs = sync.Pool{New: func() any { return new(checkInput) }}

// docCopy is a buffer for CheckJSON's copy of a document, recycled with
// docCopies.
type docCopy struct{ buf []byte }

var docCopies = sync.Pool{New: func() any { return new(docCopy) }}

// copy returns a copy of data in c's buffer.
func (c *docCopy) copy(data []byte) []byte {
	c.buf = append(c.buf[:0], data...)
	return c.buf
}

// maxPooledDoc is the largest copy kept for the next call.
const maxPooledDoc = 64 << 10

// release gives c back to docCopies, overwritten first in tests (see
// scribbleReleased), unless it grew past maxPooledDoc.
func (c *docCopy) release() {
	if scribbleReleased {
		for i := range c.buf {
			c.buf[i] = 'x'
		}
	}
	if cap(c.buf) > maxPooledDoc {
		return
	}
	c.buf = c.buf[:0]
	docCopies.Put(c)
}

// scribbleReleased makes released document copies be overwritten, so
// that a result still pointing into one shows: the package's tests set
// it.
var scribbleReleased = false

// DecodeCheckRequest reads the body of POST /check-request into a
// CheckRequest, applying every input rule CheckJSON applies and reporting
// a broken one with the same error; it does not run the check. The
// request's byte fields are copies of the text sent, its own.
func DecodeCheckRequest(data []byte) (*CheckRequest, error) {
	root, perr := parseObject(data, checkLimits, strictjson.Parse)
	if perr != nil {
		return nil, perr
	}
	var in checkInput
	var d decoder
	req := &CheckRequest{}
	d.checkRequest(root, &in, req)
	if e := d.err(); e != nil {
		return nil, e
	}
	return req, nil
}

// checkLimits bounds a check-request document.
var checkLimits = strictjson.Limits{MaxDepth: maxCheckDepth}

// checkInput is a check request as the check reads it, whether it came as
// bytes (CheckJSON) or as Go values (Check): strings, raw members parsed,
// the schema compiled and the economics' numbers parsed.
type checkInput struct {
	method, url string
	headers     []header  // in no particular order
	headerRoom  [4]header // headers' first backing array
	query, body strictjson.Value
	rawSch      strictjson.Value
	schema      *schema
	// cached is the cache's entry of the schema, when the cache served it
	// or took it: its tree stands for rawSch's text, its canonical form
	// serves requestHash.
	cached   *cacheEntry
	econ     *checkFacts // nil without economics
	econRoom checkFacts
	trees    []strictjson.Value // parsed by Check, released by release
	treeRoom [3]strictjson.Value
}

// header is one request header.
type header struct{ name, value string }

// checkFacts are the numbers of a check's economics, parsed once.
type checkFacts struct {
	down, retry, prior, price, budget decimal.Dec
	bills, hasBudget                  bool
}

// checkRequest reads the check-request object root into in, and into out
// when it is not nil, reporting every broken input rule.
func (d *decoder) checkRequest(root strictjson.Value, in *checkInput, out *CheckRequest) {
	var top [3]strictjson.Value // checkTopMembers
	d.fields(root, "", checkTopMembers, top[:])
	if rv := d.need(top[0], "", "request"); rv.IsValid() {
		d.proposedRequest(rv, "/request", in)
	}
	if sv := d.need(top[1], "", "schema"); sv.IsValid() {
		in.rawSch = sv
		d.schema(in)
	}
	if ev := top[2]; ev.IsValid() {
		in.econ = d.economics(ev, "/economics", &in.econRoom)
	}
	if out == nil || len(d.issues) > 0 {
		return
	}
	r := &out.Request
	r.Method, r.URL = in.method, in.url
	if len(in.headers) > 0 {
		r.Headers = make(map[string]string, len(in.headers))
		for _, h := range in.headers {
			r.Headers[h.name] = h.value
		}
	}
	r.Query, r.Body, out.Schema = rawCopy(in.query), rawCopy(in.body), rawCopy(in.rawSch)
	if ev := top[2]; ev.IsValid() {
		out.Economics = &CheckEconomics{BillsOnInvalidRequest: in.econ.bills}
		e := out.Economics
		for _, m := range []struct {
			name string
			to   *json.Number
		}{{"downstreamCostUsd", &e.DownstreamCostUSD}, {"retryCostUsd", &e.RetryCostUSD},
			{"priorInvalidProbability", &e.PriorInvalidProbability}, {"preflightPriceUsd", &e.PreflightPriceUSD},
			{"budgetRemainingUsd", &e.BudgetRemainingUSD}} {
			if v, ok := ev.Get(m.name); ok {
				*m.to = json.Number(v.Raw())
			}
		}
	}
}

// rawCopy returns a copy of v's text, or nil when v is absent.
func rawCopy(v strictjson.Value) json.RawMessage {
	if !v.IsValid() {
		return nil
	}
	return json.RawMessage(v.Raw())
}

// schema checks the size of in's schema and compiles it.
func (d *decoder) schema(in *checkInput) {
	sv := in.rawSch
	if n := sv.End() - sv.Start(); n > MaxSchemaBytes {
		d.add("/schema", IssueSchemaTooLarge, "expected a schema of at most 32768 bytes, found "+strconv.Itoa(n))
	} else if in.cached != nil {
		in.rawSch, in.schema = in.cached.tree, in.cached.compiled.(*schema)
	} else if s, e, serr := compileEntry(schemaCacheNow.Load(), useCheckRequest, sv, checkSchemaBase); serr != nil {
		d.issues = append(d.issues, serr.Details...)
	} else {
		in.schema, in.cached = s.(*schema), e
	}
}

// withoutCachedSchema returns a copy of the check-request document data,
// in doc, with {} in place of the text of a schema the cache holds, where
// that text starts in data, and the cache's entry of it; otherwise nil,
// nil, -1. The place is found by lexical structure
// alone: first after the first "schema" in data (a request's body seldom
// holds one, so this finds the member without reading the request's
// structure), where the text of a recent schema is compared as it stands
// and any other is looked up once its end is found; else as the value of
// the first top-level member named so. The
// caller confirms that the parser finds the document's schema there.
func withoutCachedSchema(doc *docCopy, data []byte) ([]byte, *cacheEntry, int) {
	c := schemaCacheNow.Load()
	if c == nil || len(data) > maxSubstitutedDoc {
		return nil, nil, -1
	}
	var start, end int
	var hit *cacheEntry
	if at := firstMemberStart(data, `"schema"`); at >= 0 {
		if hit = c.recentCheckSchema(data[at:]); hit != nil {
			start, end = at, at+len(hit.text)
		}
	}
	if hit == nil {
		if start, end = firstMemberSpan(data, `"schema"`); start >= 0 && end-start <= MaxSchemaBytes {
			hit = c.lookupCheckSchema(data[start:end])
		}
	}
	if hit == nil {
		if start, end = topMemberSpan(data, `"schema"`); start < 0 || end-start > MaxSchemaBytes {
			return nil, nil, -1
		}
		if hit = c.lookupCheckSchema(data[start:end]); hit == nil {
			return nil, nil, -1
		}
	}
	doc.buf = append(append(append(doc.buf[:0], data[:start]...), "{}"...), data[end:]...)
	return doc.buf, hit, start
}

// maxSubstitutedDoc is the largest document withoutCachedSchema shortens,
// far below the size at which a document's length decides whether it is
// refused (max_nodes).
const maxSubstitutedDoc = 16 << 20

// proposedRequest reads the proposed request v into in.
func (d *decoder) proposedRequest(v strictjson.Value, path string, in *checkInput) {
	var f [5]strictjson.Value // checkRequestMembers
	if !d.fields(v, path, checkRequestMembers, f[:]) {
		return
	}
	if m := d.need(f[0], path, "method"); m.IsValid() {
		if s, ok := d.str(m, memberPath{path, "method"}, 0); ok {
			d.method(s, path)
			in.method = s
		}
	}
	if u := d.need(f[1], path, "url"); u.IsValid() {
		if s, ok := d.str(u, memberPath{path, "url"}, 0); ok {
			d.url(s, path)
			in.url = s
		}
	}
	if h := f[2]; h.IsValid() {
		if h.Kind() != strictjson.Object {
			d.add(path+"/headers", IssueType, "expected an object of header names to string values, found "+kindName(h))
		} else {
			in.headers = in.headerRoom[:0]
			for it := h.Iter(); it.Next(); {
				key, val := it.Key(), it.Value()
				if val.Kind() != strictjson.String {
					d.add(child(path+"/headers", key), IssueType, "expected a string header value, found "+kindName(val))
					continue
				}
				if d.sameHeader(in.headers, key, path) {
					continue
				}
				in.headers = append(in.headers, header{key, val.Str()})
			}
		}
	}
	if q := f[3]; q.IsValid() {
		in.query = q
		d.query(q, path)
	}
	in.body = f[4]
}

// The rules of a proposed request's members, for bytes and Go values alike.

func (d *decoder) method(s, path string) {
	if !isToken(s) {
		d.add(path+"/method", IssueInvalidMethod, "expected an HTTP method token such as \"POST\", found "+strconv.Quote(clip.String(s)))
	}
}

func (d *decoder) url(s, path string) {
	if msg := checkAbsoluteURL(s); msg != "" {
		d.add(path+"/url", IssueInvalidURL, msg)
	}
}

func (d *decoder) query(q strictjson.Value, path string) {
	if q.Kind() != strictjson.Object {
		d.add(path+"/query", IssueType, "expected an object, found "+kindName(q))
	}
}

// sameHeader reports name, and returns true, when a header in accepted
// has the same name but for the case of ASCII letters (the case HTTP
// ignores). Requests carry few headers, so a scan beats building a map.
func (d *decoder) sameHeader(accepted []header, name, path string) bool {
	for _, h := range accepted {
		if equalFoldASCII(h.name, name) {
			d.add(child(path+"/headers", name), IssueDuplicateHeader, "header "+strconv.Quote(clip.String(name))+" repeats "+strconv.Quote(clip.String(h.name))+" (header names are case-insensitive)")
			return true
		}
	}
	return false
}

// economics reads the economics object v into f and returns f, or nil when
// v is not an object.
func (d *decoder) economics(v strictjson.Value, path string, f *checkFacts) *checkFacts {
	var m [6]strictjson.Value // economicsMembers
	if !d.fields(v, path, economicsMembers, m[:]) {
		return nil
	}
	if x := d.need(m[0], path, "downstreamCostUsd"); x.IsValid() {
		f.down, _ = d.amount(x, memberPath{path, "downstreamCostUsd"}, maxNumeric)
	}
	if x := d.need(m[1], path, "billsOnInvalidRequest"); x.IsValid() {
		f.bills = d.boolean(x, memberPath{path, "billsOnInvalidRequest"})
	}
	if x := d.need(m[2], path, "retryCostUsd"); x.IsValid() {
		f.retry, _ = d.amount(x, memberPath{path, "retryCostUsd"}, maxNumeric)
	}
	f.prior, f.price = defaultPrior, defaultCheckPrice
	if x := m[3]; x.IsValid() {
		f.prior, _ = d.amount(x, memberPath{path, "priorInvalidProbability"}, "1")
	}
	if x := m[4]; x.IsValid() {
		f.price, _ = d.amount(x, memberPath{path, "preflightPriceUsd"}, maxNumeric)
	}
	if x := m[5]; x.IsValid() {
		f.budget, f.hasBudget = d.amount(x, memberPath{path, "budgetRemainingUsd"}, maxNumeric)
	}
	return f
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
// request or fetches its URL, and it does not change req.
//
// Check applies the input rules of [CheckJSON] to the Go values and
// answers as CheckJSON answers the same request sent as JSON: the same
// result, or an error with the same code, pointers and messages. Query,
// Body and Schema are read as JSON text exactly as given (their size
// included). Its strings must be UTF-8, as in JSON: a method, URL or
// header name or value that is not is refused with code invalid_json and
// an invalid_utf8 detail at its pointer, never repaired. A json.Number
// field must be empty or JSON number text; a required one that is empty
// is missing (encoding/json would write it as 0).
//
// Validation counts its work and stops at a fixed ceiling of 3,000,000
// steps: a step is a body value visited, an enum member compared, a byte of
// a string matched against a pattern, or a pattern instruction visited
// while the matcher builds a state it has not built before. A request
// that needs more gets no verdict but an *Error with code limit_exceeded
// and one detail, max_work, whose path is the schema's pattern or enum
// keyword that needed the work (or the body value reached). The ceiling
// keeps Check and CheckJSON within tens of milliseconds of CPU for any
// request within the size limits, so a caller that checks untrusted
// schemas need not run its own timer. Compiling the schema's patterns,
// before validation, has bounds of its own: 3,000 program instructions
// per pattern, 30,000 per schema, and 60,000 character-class ranges per
// schema (a range or character in a class counts one, \p{L} about 680); a
// schema over them is refused with unsupported_pattern naming the pattern.
func Check(req *CheckRequest) (*CheckResult, error) {
	if req == nil {
		return nil, &Error{Code: ErrorInvalidRequest, Message: "the check request is nil"}
	}
	var in checkInput
	in.trees = in.treeRoom[:0]
	defer in.release()
	if err := readCheckRequest(req, &in); err != nil {
		return nil, err
	}
	return in.check()
}

// checkOutcome is a CheckResult and its economics, in one allocation.
type checkOutcome struct {
	res  CheckResult
	econ EconomicsResult
}

// check works out the outcome of in: the body validated against the
// schema, the warnings, the economics and the request hash.
func (in *checkInput) check() (*CheckResult, error) {
	out := &checkOutcome{res: CheckResult{Errors: []Issue{}, Warnings: []Issue{}}}
	res := &out.res
	errs := issueList{max: maxCheckErrors}

	if !in.body.IsValid() {
		if _, ok := in.rawSch.Get("type"); ok {
			errs.add(Issue{Path: "/request/body", Code: IssueRequired, Message: "the request has no body; the schema's type keyword requires one"})
		} else {
			res.Warnings = append(res.Warnings, Issue{Path: "/request/body", Code: IssueBodyAbsent, Message: "the request has no body; nothing was validated"})
		}
	} else {
		if err := in.schema.validateAt(in.body, "/request/body", &errs, "/schema"); err != nil {
			return nil, err
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
	res.Warnings = append(res.Warnings, requestWarnings(in.headers, in.method, in.body.IsValid())...)

	if in.econ != nil {
		warn := checkEconomics(in.econ, res.Valid, &out.econ)
		res.Economics = &out.econ
		if warn != nil {
			res.Warnings = append(res.Warnings, *warn)
		}
	}
	hash, herr := requestHash(in)
	if herr != nil {
		return nil, herr
	}
	res.RequestHash = hash
	return res, nil
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
	// strings.Contains for each word, in one pass: at each byte, only the
	// words that start with it are compared.
	for i := 0; i < len(lower); i++ {
		for _, w := range sensitiveByFirst[lower[i]] {
			if strings.HasPrefix(lower[i:], w) {
				return true
			}
		}
	}
	return false
}

// sensitiveByFirst lists sensitiveWords by their first byte.
var sensitiveByFirst = func() (t [256][]string) {
	for _, w := range sensitiveWords {
		t[w[0]] = append(t[w[0]], w)
	}
	return t
}()

// requestWarnings lists the warnings about the proposed request itself:
// its headers, method and body.
func requestWarnings(headers []header, method string, hasBody bool) []Issue {
	var out []Issue
	var local [4]string
	names := local[:0]
	for _, h := range headers {
		if isSensitiveHeader(h.name) {
			names = append(names, h.name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		out = append(out, Issue{Path: "/request/headers/" + strictjson.EscapePointerToken(name), Code: IssueSensitiveHeader,
			Message: "header " + strconv.Quote(clip.String(name)) + " carries credentials; do not send credentials to preflight"})
	}
	if hasBody {
		if m := strings.ToUpper(method); m == "GET" || m == "HEAD" {
			out = append(out, Issue{Path: "/request/method", Code: IssueBodyWithGet,
				Message: m + " request carries a body; many servers ignore or reject it"})
		}
	}
	return out
}
