package adapt

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"unicode"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
)

// RetryAndReflectType is the "response_type" of the function response ADK's
// plugin/retryandreflect puts in place of a tool's error.
const RetryAndReflectType = "ERROR_HANDLED_BY_REFLECT_AND_RETRY_PLUGIN"

// InBand reports whether result, the result of a call that returned no
// error, is a failure the frameworks' own error idioms put into a result,
// and classifies it:
//
//   - a JSON object with a non-empty "error" member: ADK's function
//     response for a tool's error, a Genkit or ADK tool that returns
//     {"error": …} instead of failing, an MCP-style error object;
//   - the response of ADK's plugin/retryandreflect ("response_type" is
//     [RetryAndReflectType], the error in "error_details");
//   - a text (or a JSON string) that names an HTTP error status, as
//     "HTTP 503", "status 422" or "503 Service Unavailable", or that
//     begins with "error" or "failed": what eino's
//     utils.WrapToolWithErrorHandler returns in place of a tool's error
//     when its handler returns the error's text.
//
// The status is the object's numeric "status", "statusCode",
// "status_code" or "code" member (400 to 599), else the first HTTP error
// status the error text names, classified by agent.ClassifyStatus; a
// failure without a status is transient, which never blocks a retry.
// Any other result is not a failure (ok is false).
func InBand(result []byte) (o preflight.Outcome, ok bool) {
	t := bytes.TrimSpace(result)
	if len(t) == 0 {
		return "", false
	}
	switch {
	case t[0] == '{':
		var m map[string]json.RawMessage
		if json.Unmarshal(t, &m) != nil {
			return textFailure(string(t))
		}
		var text string
		if rt, _ := str(m["response_type"]); rt == RetryAndReflectType {
			text, _ = str(m["error_details"])
		} else if e, present := m["error"]; present && failing(e) {
			text, _ = str(e)
			if text == "" {
				text = string(e)
			}
		} else {
			return "", false
		}
		for _, k := range []string{"status", "statusCode", "status_code", "code"} {
			if n, err := strconv.Atoi(string(m[k])); err == nil && n >= 400 && n <= 599 {
				return agent.ClassifyStatus(n), true
			}
		}
		if n := statusIn(text); n != 0 {
			return agent.ClassifyStatus(n), true
		}
		return preflight.OutcomeTransientFailure, true
	case t[0] == '"':
		s, _ := str(t)
		return textFailure(s)
	case json.Valid(t):
		return "", false // an array, number, boolean or null
	}
	return textFailure(string(t))
}

// failing reports whether an "error" member says there was one: not
// null, false, "" or {}.
func failing(e json.RawMessage) bool {
	switch s := string(bytes.TrimSpace(e)); s {
	case "", "null", "false", `""`, "{}", "[]":
		return false
	}
	return true
}

func str(v json.RawMessage) (string, bool) {
	var s string
	err := json.Unmarshal(v, &s)
	return s, err == nil
}

// textFailure classifies a text result: a failure when it names an HTTP
// error status or begins with "error" or "failed".
func textFailure(s string) (preflight.Outcome, bool) {
	if n := statusIn(s); n != 0 {
		return agent.ClassifyStatus(n), true
	}
	l := strings.ToLower(strings.TrimSpace(s))
	if strings.HasPrefix(l, "error") || strings.HasPrefix(l, "failed") {
		return preflight.OutcomeTransientFailure, true
	}
	return "", false
}

// statusIn returns the first HTTP error status (400 to 599) s names: a
// number after "HTTP", "status" or "code", or followed by its status text
// ("503 Service Unavailable"); 0 when there is none.
func statusIn(s string) int {
	words := strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '/' && r != '.' })
	for i, w := range words {
		n, err := strconv.Atoi(w)
		if err != nil || len(w) != 3 || n < 400 || n > 599 {
			continue
		}
		if i > 0 {
			p := strings.ToLower(words[i-1])
			if strings.HasPrefix(p, "http") || p == "status" || p == "code" {
				return n
			}
		}
		if st := http.StatusText(n); st != "" {
			next := strings.Join(words[i+1:min(len(words), i+1+len(strings.Fields(st)))], " ")
			if strings.EqualFold(next, strings.Join(strings.FieldsFunc(st, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }), " ")) {
				return n
			}
		}
	}
	return 0
}
