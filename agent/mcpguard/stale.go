package mcpguard

// ToolsChanged marks the session's tool list stale, as the server's
// notifications/tools/list_changed says it is: [Session.NeedsList] then
// reports true, so that the next call lists the tools again before it is
// decided. Until that list arrives, calls are decided on the configured
// specs alone, so nothing the old list said (a read-only annotation that
// lets a result be reused, say) outlives the change.
func (s *Session) ToolsChanged() { s.g.toolsChanged(s.st) }

// toolsChanged forgets what the last tools/list said.
func (g *guard) toolsChanged(st *session) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.listed, st.partial = false, nil
	clear(st.missing)
	st.typed = make(map[string]bool)
	st.outputs = nil
	if ts, _, err := g.toolset(nil); err == nil {
		st.s.SetTools(ts)
		st.unchecked = nil
	}
}
