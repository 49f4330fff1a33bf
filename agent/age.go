package agent

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// formatAge writes d as seconds with millisecond resolution, truncated, as
// exact decimal text: 0 → "0", 1.5 s → "1.5", 61.25 s → "61.25". Negative
// durations (a clock that stepped back) are "0".
func formatAge(d time.Duration) json.Number {
	if d < 0 {
		d = 0
	}
	ms := d.Milliseconds()
	s := strconv.FormatInt(ms/1000, 10)
	if frac := ms % 1000; frac != 0 {
		f := strings.TrimRight(strconv.FormatInt(1000+frac, 10)[1:], "0")
		s += "." + f
	}
	return json.Number(s)
}
