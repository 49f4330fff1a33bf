package strictjson_test

import (
	"fmt"
	"strings"

	"github.com/agentpreflight/preflight/strictjson"
)

func ExampleClip() {
	fmt.Println(strictjson.Clip("search"))
	long := strings.Repeat("é", 40) // 80 bytes
	fmt.Println(len(strictjson.Clip(long)), strings.HasSuffix(strictjson.Clip(long), "…"))
	// Output:
	// search
	// 67 true
}
