package adapt

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestApprovalMessageEscapesHidden: characters that hide or reorder text
// are shown as the JSON escapes that name them, and the arguments shown
// still read as the same JSON value.
func TestApprovalMessageEscapesHidden(t *testing.T) {
	args := "{\"to\":\"al\u202eice\",\"z\":\"a\u200bb\U000E0041\",\"ok\":\"\u00e9 \u4e2d\"}"
	msg := (&Approval{Tool: "send", Arguments: json.RawMessage(args), EstimatedCostUSD: "1", Reason: "r"}).Message()
	shown, _, _ := strings.Cut(strings.SplitN(msg, "\nArguments: ", 2)[1], "\n")
	want := `{"to":"al\u202eice","z":"a\u200bb\udb40\udc41","ok":"` + "\u00e9 \u4e2d" + `"}`
	if shown != want {
		t.Fatalf("shown %q, want %q", shown, want)
	}
	var a, b any
	if json.Unmarshal([]byte(shown), &a) != nil || json.Unmarshal([]byte(args), &b) != nil || !jsonEqual(a, b) {
		t.Fatalf("the arguments shown %s do not read as %s", shown, args)
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
