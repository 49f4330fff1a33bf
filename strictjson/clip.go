package strictjson

import "github.com/agentpreflight/preflight/internal/clip"

// ClipMax is how many bytes of caller-supplied text a preflight message
// repeats.
const ClipMax = clip.Max

// Clip returns s as preflight messages repeat caller-supplied text: s
// itself, or when it is longer than ClipMax bytes, its first ClipMax bytes
// (fewer, to keep whole runes) followed by "…".
func Clip(s string) string { return clip.String(s) }
