//go:build !unix

package machine

import "time"

// ownCPU is not known here.
func ownCPU() (time.Duration, bool) { return 0, false }
