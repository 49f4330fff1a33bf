package preflight

import (
	"net/netip"
	"strings"
	"unicode"

	"github.com/agentpreflight/preflight/internal/pattern"
)

// formatCheckers are the formats the full validator can assert, when a
// schema is compiled with format assertion (by default format is only an
// annotation, as 2020-12's format-annotation vocabulary says). A format
// not listed here is never asserted. The maximum input is bounded by the
// payload's size, and each checker is linear in its input but for regex,
// which compiles under the pattern limits.
var formatCheckers = map[string]func(string) bool{
	"date-time":     isDateTime,
	"date":          isDate,
	"time":          isTime,
	"duration":      isDuration,
	"email":         isEmail,
	"hostname":      isHostname,
	"ipv4":          isIPv4,
	"ipv6":          isIPv6,
	"uri":           func(s string) bool { return isURIRef(s, true) },
	"uri-reference": func(s string) bool { return isURIRef(s, false) },
	"uuid":          isUUID,
	"regex":         isRegex,
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// digits reads n ASCII digits at s[i:] as a number.
func digits(s string, i, n int) (int, bool) {
	if i+n > len(s) {
		return 0, false
	}
	v := 0
	for _, c := range []byte(s[i : i+n]) {
		if !isDigit(c) {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

// isDate: RFC 3339 full-date.
func isDate(s string) bool {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return false
	}
	y, ok1 := digits(s, 0, 4)
	m, ok2 := digits(s, 5, 2)
	d, ok3 := digits(s, 8, 2)
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || d < 1 {
		return false
	}
	days := [13]int{0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}[m]
	if m == 2 && y%4 == 0 && (y%100 != 0 || y%400 == 0) {
		days = 29
	}
	return d <= days
}

// isTime: RFC 3339 full-time, with a leap second only at 23:59:60 UTC.
func isTime(s string) bool {
	if len(s) < 9 || s[2] != ':' || s[5] != ':' {
		return false
	}
	h, ok1 := digits(s, 0, 2)
	m, ok2 := digits(s, 3, 2)
	sec, ok3 := digits(s, 6, 2)
	if !ok1 || !ok2 || !ok3 || h > 23 || m > 59 || sec > 60 {
		return false
	}
	i := 8
	if i < len(s) && s[i] == '.' {
		j := i + 1
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		if j == i+1 {
			return false
		}
		i = j
	}
	if i >= len(s) {
		return false
	}
	offset := 0
	switch s[i] {
	case 'Z', 'z':
		if i+1 != len(s) {
			return false
		}
	case '+', '-':
		if len(s) != i+6 || s[i+3] != ':' {
			return false
		}
		oh, ok1 := digits(s, i+1, 2)
		om, ok2 := digits(s, i+4, 2)
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return false
		}
		offset = oh*60 + om
		if s[i] == '-' {
			offset = -offset
		}
	default:
		return false
	}
	if sec == 60 {
		utc := ((h*60+m-offset)%1440 + 1440) % 1440
		return utc == 23*60+59
	}
	return true
}

// isDateTime: RFC 3339 date-time.
func isDateTime(s string) bool {
	return len(s) > 11 && (s[10] == 'T' || s[10] == 't') && isDate(s[:10]) && isTime(s[11:])
}

// isDuration: RFC 3339 Appendix A duration (ASCII digits only).
func isDuration(s string) bool {
	if len(s) < 2 || s[0] != 'P' {
		return false
	}
	rest := s[1:]
	// units reads number-letter pairs in the order of allowed, each at
	// most once and without gaps in the chain the grammar allows.
	units := func(r string, allowed string) (string, string, bool) {
		var seen []byte
		for r != "" && r[0] != 'T' {
			j := 0
			for j < len(r) && isDigit(r[j]) {
				j++
			}
			if j == 0 || j == len(r) {
				return "", "", false
			}
			seen = append(seen, r[j])
			r = r[j+1:]
		}
		// The letters must be a contiguous run of allowed.
		if len(seen) == 0 {
			return r, "", true
		}
		at := strings.IndexByte(allowed, seen[0])
		if at < 0 || !strings.HasPrefix(allowed[at:], string(seen)) {
			return "", "", false
		}
		return r, string(seen), true
	}
	r, date, ok := units(rest, "YMD")
	if !ok {
		// A week: digits and W alone.
		if strings.HasSuffix(rest, "W") && len(rest) > 1 {
			for i := 0; i < len(rest)-1; i++ {
				if !isDigit(rest[i]) {
					return false
				}
			}
			return true
		}
		return false
	}
	if r == "" {
		return date != ""
	}
	r = r[1:] // the T
	r2, tm, ok := units(r, "HMS")
	return ok && r2 == "" && tm != ""
}

// isUUID: RFC 4122 textual form, hex digits in either case.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return false
			}
			continue
		}
		if !isDigit(c) && (c|0x20 < 'a' || c|0x20 > 'f') {
			return false
		}
	}
	return true
}

// isIPv4: dotted-quad, no leading zeros.
func isIPv4(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return false
	}
	for _, p := range parts {
		if p == "" || len(p) > 3 || len(p) > 1 && p[0] == '0' {
			return false
		}
		n, ok := digits(p, 0, len(p))
		if !ok || n > 255 {
			return false
		}
	}
	return true
}

// isIPv6: RFC 4291 text, without a zone.
func isIPv6(s string) bool {
	if !strings.Contains(s, ":") || strings.Contains(s, "%") {
		return false
	}
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is6()
}

// isHostname: RFC 1123 host name: labels of letters, digits and hyphens,
// 1 to 63 characters, not starting or ending with a hyphen, 253 in all.
func isHostname(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !isDigit(c) && c != '-' && (c|0x20 < 'a' || c|0x20 > 'z') {
				return false
			}
		}
		// "xn--" starts an A-label (Punycode), which must decode to a
		// valid U-label; any other "--" in positions 3 and 4 is reserved
		// (RFC 5891 §4.2.3.1).
		if len(label) >= 4 && label[2:4] == "--" {
			if !strings.EqualFold(label[:2], "xn") {
				return false
			}
			u, ok := punycodeDecode(strings.ToLower(label[4:]))
			if !ok || !validULabel(u) {
				return false
			}
		}
	}
	return true
}

// isEmail: RFC 5321 mailbox: a dot-atom or quoted local part, and a host
// name or an address literal.
func isEmail(s string) bool {
	at := strings.LastIndexByte(s, '@')
	if at <= 0 || at == len(s)-1 {
		return false
	}
	local, domain := s[:at], s[at+1:]
	if local[0] == '"' {
		if len(local) < 2 || local[len(local)-1] != '"' {
			return false
		}
		for i := 1; i < len(local)-1; i++ {
			c := local[i]
			if c == '\\' {
				i++
				continue
			}
			if c == '"' || c < 32 || c > 126 {
				return false
			}
		}
	} else {
		if strings.HasPrefix(local, ".") || strings.HasSuffix(local, ".") || strings.Contains(local, "..") {
			return false
		}
		for i := 0; i < len(local); i++ {
			c := local[i]
			if !(isDigit(c) || c|0x20 >= 'a' && c|0x20 <= 'z' || c == '.' || strings.IndexByte("!#$%&'*+-/=?^_`{|}~", c) >= 0) {
				return false
			}
		}
	}
	if strings.HasPrefix(domain, "[") && strings.HasSuffix(domain, "]") {
		lit := domain[1 : len(domain)-1]
		if v6, ok := strings.CutPrefix(lit, "IPv6:"); ok {
			return isIPv6(v6)
		}
		return isIPv4(lit)
	}
	return isHostname(domain)
}

// isRegex: an ECMA-262 pattern (u flag). One the engine cannot run
// (lookaround, back-references) or that is over its limits is still a
// valid regex.
func isRegex(s string) bool {
	_, _, _, err := pattern.CompileWithin(s, maxPatternInsts, maxSchemaClassRanges)
	if err == nil {
		return true
	}
	pe, ok := err.(*pattern.Error)
	return ok && (pe.Unsupported || pe.OverSize || pe.OverRanges || pe.TooDeep)
}

// RFC 3986 character classes.
func isUnreserved(c byte) bool {
	return isDigit(c) || c|0x20 >= 'a' && c|0x20 <= 'z' || c == '-' || c == '.' || c == '_' || c == '~'
}

func isSubDelim(c byte) bool { return strings.IndexByte("!$&'()*+,;=", c) >= 0 }

func isHex(c byte) bool { return isDigit(c) || c|0x20 >= 'a' && c|0x20 <= 'f' }

// validChars reports whether s holds only unreserved, sub-delims,
// percent-encodings and the bytes of extra.
func validChars(s, extra string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return false
			}
			i += 2
		case isUnreserved(c) || isSubDelim(c) || strings.IndexByte(extra, c) >= 0:
		default:
			return false
		}
	}
	return true
}

// isURIRef: an RFC 3986 URI (absolute true) or URI reference.
func isURIRef(s string, absolute bool) bool {
	rest := s
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		if !validChars(rest[i+1:], ":@/?") {
			return false
		}
		rest = rest[:i]
	}
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		if !validChars(rest[i+1:], ":@/?") {
			return false
		}
		rest = rest[:i]
	}
	// A scheme: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) before the
	// first ':' when no '/' comes first.
	hasScheme := false
	if i := strings.IndexByte(rest, ':'); i >= 0 && !strings.Contains(rest[:i], "/") {
		scheme := rest[:i]
		if scheme == "" || scheme[0]|0x20 < 'a' || scheme[0]|0x20 > 'z' {
			return false
		}
		for j := 1; j < len(scheme); j++ {
			c := scheme[j]
			if !isDigit(c) && (c|0x20 < 'a' || c|0x20 > 'z') && c != '+' && c != '-' && c != '.' {
				return false
			}
		}
		hasScheme, rest = true, rest[i+1:]
	}
	if absolute && !hasScheme {
		return false
	}
	if after, ok := strings.CutPrefix(rest, "//"); ok {
		auth, path := after, ""
		if j := strings.IndexByte(after, '/'); j >= 0 {
			auth, path = after[:j], after[j:]
		}
		return isAuthority(auth) && validChars(path, ":@/")
	}
	// path-noscheme: no ':' in the first segment of a relative reference.
	if !hasScheme {
		first := rest
		if j := strings.IndexByte(rest, '/'); j >= 0 {
			first = rest[:j]
		}
		if strings.Contains(first, ":") {
			return false
		}
	}
	return validChars(rest, ":@/")
}

// isAuthority: [ userinfo "@" ] host [ ":" port ].
func isAuthority(a string) bool {
	if i := strings.LastIndexByte(a, '@'); i >= 0 {
		if !validChars(a[:i], ":") {
			return false
		}
		a = a[i+1:]
	}
	host, port := a, ""
	if strings.HasPrefix(a, "[") {
		end := strings.IndexByte(a, ']')
		if end < 0 {
			return false
		}
		host, port = a[:end+1], a[end+1:]
		lit := host[1 : len(host)-1]
		if !isIPv6(lit) && !(len(lit) > 1 && (lit[0] == 'v' || lit[0] == 'V')) {
			return false
		}
	} else if i := strings.LastIndexByte(a, ':'); i >= 0 {
		host, port = a[:i], a[i:]
		if !validChars(host, "") {
			return false
		}
	} else if !validChars(host, "") {
		return false
	}
	if port != "" {
		if port[0] != ':' {
			return false
		}
		for i := 1; i < len(port); i++ {
			if !isDigit(port[i]) {
				return false
			}
		}
	}
	return true
}

// punycodeDecode decodes the Punycode of an A-label without its "xn--"
// (RFC 3492), refusing overflow and a result of more than 63 code points.
func punycodeDecode(in string) ([]rune, bool) {
	const base, tmin, tmax, skew, damp = 36, 1, 26, 38, 700
	var out []rune
	if i := strings.LastIndexByte(in, '-'); i >= 0 {
		for _, c := range []byte(in[:i]) {
			if c >= 0x80 {
				return nil, false
			}
			out = append(out, rune(c))
		}
		in = in[i+1:]
	}
	n, bias, i := 128, 72, 0
	for pos := 0; pos < len(in); {
		oldi, w := i, 1
		for k := base; ; k += base {
			if pos >= len(in) {
				return nil, false
			}
			c := in[pos]
			pos++
			var d int
			switch {
			case c >= 'a' && c <= 'z':
				d = int(c - 'a')
			case c >= '0' && c <= '9':
				d = int(c-'0') + 26
			default:
				return nil, false
			}
			if d > (1<<30-i)/w {
				return nil, false
			}
			i += d * w
			t := min(max(k-bias, tmin), tmax)
			if d < t {
				break
			}
			w *= base - t
			if w > 1<<30 {
				return nil, false
			}
		}
		numPoints := len(out) + 1
		delta := i - oldi
		if oldi == 0 {
			delta /= damp
		} else {
			delta /= 2
		}
		delta += delta / numPoints
		k := 0
		for delta > ((base-tmin)*tmax)/2 {
			delta /= base - tmin
			k += base
		}
		bias = k + (base-tmin+1)*delta/(delta+skew)
		n += i / numPoints
		i %= numPoints
		if n > unicode.MaxRune || len(out) >= 63 {
			return nil, false
		}
		out = append(out[:i], append([]rune{rune(n)}, out[i:]...)...)
		i++
	}
	return out, len(out) > 0
}

// validULabel applies the rules of RFC 5891 and 5892 that tool inputs
// meet in practice: no hyphens in positions 3 and 4, no leading combining
// mark, none of the code points RFC 5892 lists as DISALLOWED exceptions,
// and the contextual rules for MIDDLE DOT, Greek KERAIA, Hebrew GERESH and
// GERSHAYIM, KATAKANA MIDDLE DOT, Arabic-Indic digits and ZERO WIDTH
// JOINER.
func validULabel(u []rune) bool {
	if len(u) >= 4 && u[2] == '-' && u[3] == '-' {
		return false
	}
	if unicode.In(u[0], unicode.Mn, unicode.Mc, unicode.Me) {
		return false
	}
	arabic, extArabic := false, false
	for j, r := range u {
		switch {
		case r == 0x0640 || r == 0x07FA || r == 0x302E || r == 0x302F || r >= 0x3031 && r <= 0x3035 || r == 0x303B:
			return false
		case r == 0x00B7: // MIDDLE DOT: between two 'l'
			if j == 0 || j == len(u)-1 || u[j-1] != 'l' || u[j+1] != 'l' {
				return false
			}
		case r == 0x0375: // Greek KERAIA: followed by Greek
			if j == len(u)-1 || !unicode.Is(unicode.Greek, u[j+1]) {
				return false
			}
		case r == 0x05F3 || r == 0x05F4: // GERESH, GERSHAYIM: after Hebrew
			if j == 0 || !unicode.Is(unicode.Hebrew, u[j-1]) {
				return false
			}
		case r == 0x30FB: // KATAKANA MIDDLE DOT: with Hiragana, Katakana or Han
			found := false
			for _, x := range u {
				if x != 0x30FB && (unicode.In(x, unicode.Hiragana, unicode.Katakana, unicode.Han)) {
					found = true
				}
			}
			if !found {
				return false
			}
		case r >= 0x0660 && r <= 0x0669:
			arabic = true
		case r >= 0x06F0 && r <= 0x06F9:
			extArabic = true
		case r == 0x200D: // ZERO WIDTH JOINER: after a virama
			if j == 0 || !isVirama(u[j-1]) {
				return false
			}
		}
	}
	return !(arabic && extArabic)
}

// isVirama reports whether r is a virama (canonical combining class 9)
// of the Indic scripts and their neighbours.
func isVirama(r rune) bool {
	switch r {
	case 0x094D, 0x09CD, 0x0A4D, 0x0ACD, 0x0B4D, 0x0BCD, 0x0C4D, 0x0CCD, 0x0D3B, 0x0D3C, 0x0D4D, 0x0DCA,
		0x0E3A, 0x0EBA, 0x0F84, 0x1039, 0x103A, 0x1714, 0x1715, 0x1734, 0x17D2, 0x1A60, 0x1B44, 0x1BAA, 0x1BAB,
		0x1BF2, 0x1BF3, 0x2D7F, 0xA806, 0xA82C, 0xA8C4, 0xA953, 0xA9C0, 0xAAF6, 0xABED:
		return true
	}
	return false
}
