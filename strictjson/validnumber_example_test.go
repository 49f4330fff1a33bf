package strictjson_test

import (
	"fmt"

	"github.com/agentpreflight/preflight/strictjson"
)

// A json.Number from a caller is checked before it is written out as it
// stands.
func ExampleValidNumber() {
	for _, s := range []string{"12.50", "-0", "1e400", "012", "+1", ".5", "1 ", "0x10"} {
		fmt.Printf("%-6q %v\n", s, strictjson.ValidNumber(s))
	}
	// Output:
	// "12.50" true
	// "-0"   true
	// "1e400" true
	// "012"  false
	// "+1"   false
	// ".5"   false
	// "1 "   false
	// "0x10" false
}
