package mcpguard

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Attacks on approvals as a hostile client would make them: each must
// run nothing it was not approved for.

func TestApprovalAttackArgumentsSpelledOtherwise(t *testing.T) {
	for _, tc := range []struct {
		name, asked, sent string
		runs              int // 1 when preflight takes both for one call
	}{
		{"keys reordered", `{"a":1,"b":"x"}`, `{"b":"x","a":1}`, 1},
		{"unicode escape", `{"p":"A"}`, `{"p":"\u0041"}`, 1},
		{"big integer off by one", `{"n":9007199254740992}`, `{"n":9007199254740993}`, 0},
		{"number spelling", `{"n":1}`, `{"n":1.0e0}`, 1},
		// One double, so one requestFingerprint (RFC 8785): preflight
		// takes them for one call, and so does the approval.
		{"long decimal", `{"n":0.1}`, `{"n":0.10000000000000000001}`, 1},
		{"string for number", `{"n":1}`, `{"n":"1"}`, 0},
		{"extra member", `{"p":1}`, `{"p":1,"q":2}`, 0},
		{"null member", `{"p":1}`, `{"p":1,"q":null}`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			as := newApprovalSession(t, "0", Approvals{})
			state := as.ask(t, tc.asked)
			m, rep := as.call(t, context.Background(), retry(tc.sent, state, accept))
			if as.runs != tc.runs {
				t.Fatalf("approved %s, retried with %s: %v (report %q), %d runs; want %d", tc.asked, tc.sent, m, rep.Approval, as.runs, tc.runs)
			}
		})
	}
}

func TestApprovalAttackAnswerNotTrue(t *testing.T) {
	for _, answer := range []string{
		`{"action":"accept","content":{"approve":"true"}}`,
		`{"action":"accept","content":{"approve":1}}`,
		`{"action":"accept","content":{}}`,
		`{"action":"accept"}`,
		`{"action":"Accept","content":{"approve":true}}`,
		`{"content":{"approve":true}}`,
		`"accept"`,
		`true`,
	} {
		as := newApprovalSession(t, "0", Approvals{})
		state := as.ask(t, `{}`)
		m, rep := as.call(t, context.Background(), retry(`{}`, state, answer))
		if as.runs != 0 {
			t.Errorf("answer %s: %v (report %q), ran", answer, m, rep.Approval)
		}
	}
}

func TestApprovalAttackOtherTool(t *testing.T) {
	for _, name := range []string{"RM", "rm ", " rm", "rm\u0000", "ls"} {
		as := newApprovalSession(t, "0", Approvals{})
		state := as.ask(t, `{}`)
		p := strings.Replace(retry(`{}`, state, accept), `"name":"rm"`, `"name":`+mustQuote(name), 1)
		m, rep := as.call(t, context.Background(), p)
		if as.runs != 0 && name != "ls" {
			t.Errorf("approval of rm used for %q: %v (report %q), ran", name, m, rep.Approval)
		}
		if name == "ls" && rep.Approval != "invalid" {
			t.Errorf("approval of rm used for ls: %v (report %q)", m, rep.Approval)
		}
	}
}

func mustQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

func TestApprovalAttackStateMangled(t *testing.T) {
	as := newApprovalSession(t, "0", Approvals{})
	state := as.ask(t, `{}`)
	payload, sig, _ := strings.Cut(strings.TrimPrefix(state, approvalPrefix), ".")
	for _, s := range []string{
		state[:len(state)-1], state + "A", state + "=", state + ".x", approvalPrefix + payload + ".",
		approvalPrefix + payload, approvalPrefix + "." + sig, strings.ToUpper(state), " " + state, state + " ",
	} {
		m, rep := as.call(t, context.Background(), retry(`{}`, s, accept))
		if as.runs != 0 {
			t.Fatalf("state %q: %v (report %q), ran", s, m, rep.Approval)
		}
	}
	if _, rep := as.call(t, context.Background(), retry(`{}`, state, accept)); as.runs != 1 {
		t.Fatalf("the genuine state after the mangled ones: report %q, %d runs", rep.Approval, as.runs)
	}
}

func TestApprovalAttackConcurrentRetries(t *testing.T) {
	for _, window := range []string{"0", "300"} {
		as := newApprovalSession(t, window, Approvals{})
		state := as.ask(t, `{"p":1}`)
		var runs atomic.Int32
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Half the retries are the same bytes, half differ (so they do not coalesce).
				answer := accept
				if i%2 == 1 {
					answer = `{"action":"accept","content":{"approve":true,"n":` + string(rune('0'+i%10)) + `}}`
				}
				_, err := as.CallTool(context.Background(), json.RawMessage(retry(`{"p":1}`, state, answer)), func(context.Context) (json.RawMessage, error) {
					runs.Add(1)
					return json.RawMessage(`{"content":[]}`), nil
				})
				if err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if n := runs.Load(); n != 1 {
			t.Errorf("window %s: 16 concurrent retries of one approval ran %d times, want 1", window, n)
		}
	}
}

// TestApprovalAttackMACSpelledOtherwise: a requestState whose MAC (or
// payload) is written with other base64 text that decodes to the same
// bytes (the unused low bits of the last character set) is altered text,
// and is refused.
func TestApprovalAttackMACSpelledOtherwise(t *testing.T) {
	as := newApprovalSession(t, "0", Approvals{})
	state := as.ask(t, `{}`)
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	last := strings.IndexByte(alphabet, state[len(state)-1])
	// 32 bytes take 43 characters; the last one's two low bits are unused.
	alt := state[:len(state)-1] + string(alphabet[last^1])
	m, rep := as.call(t, context.Background(), retry(`{}`, alt, accept))
	if as.runs != 0 || rep.Approval != "invalid" {
		t.Fatalf("a respelled MAC: %v (report %q), %d runs; want refused as invalid", m, rep.Approval, as.runs)
	}
}

// TestApprovalShownWithoutInvisibleCharacters: arguments a model wrote
// with characters that reorder or hide text (a right-to-left override,
// a zero-width space) are shown to the person escaped, so that what they
// read is the call that runs.
func TestApprovalShownWithoutInvisibleCharacters(t *testing.T) {
	as := newApprovalSession(t, "0", Approvals{})
	m, _ := as.call(t, context.Background(), `{"name":"rm","arguments":{"path":"/tmp/\u202egpj.exe","to":"bo\u200bb","n":"\u00e9"}}`)
	var ir map[string]struct {
		Params struct {
			Message string `json:"message"`
		} `json:"params"`
	}
	json.Unmarshal(m["inputRequests"], &ir)
	msg := ir[ApprovalInputKey].Params.Message
	if strings.ContainsAny(msg, "\u202e\u200b") || !strings.Contains(msg, `\u202egpj.exe`) || !strings.Contains(msg, `bo\u200bb`) || !strings.Contains(msg, "\u00e9") {
		t.Fatalf("the person is shown %q; want the invisible characters escaped, others as they are", msg)
	}
}

// TestApprovalScopeUnambiguous: no two different principal and run pairs
// share an approval's scope, whatever bytes their names hold.
func TestApprovalScopeUnambiguous(t *testing.T) {
	pairs := [][2]string{{"a\x00b", "c"}, {"a", "b\x00c"}, {"a\x00", "b"}, {"a", "\x00b"}, {"", "a\x00b"}, {"a\x00b", ""}}
	seen := map[string][2]string{}
	for _, p := range pairs {
		s := (&Approvals{Principal: p[0], Run: p[1]}).scope()
		if q, ok := seen[s]; ok {
			t.Errorf("principal %q run %q and principal %q run %q share a scope", q[0], q[1], p[0], p[1])
		}
		seen[s] = p
	}
}
