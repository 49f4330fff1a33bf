package tools_test

import (
	"testing"

	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/tools"
)

func TestResultStoreConformance(t *testing.T) {
	for _, tt := range []struct {
		name     string
		newStore func(t *testing.T) tools.ResultStore
	}{
		{"memory", func(*testing.T) tools.ResultStore { return tools.NewMemoryResultStore(0, 0) }},
		{"shared", func(*testing.T) tools.ResultStore { return tools.NewSharedResultStore(nil) }},
		{"shared view", func(t *testing.T) tools.ResultStore {
			v := tools.NewSharedResultStore(nil).View()
			t.Cleanup(v.Close)
			return v
		}},
		{"view among views", func(t *testing.T) tools.ResultStore {
			s := tools.NewSharedResultStore(nil)
			other := s.View()
			t.Cleanup(other.Close)
			if _, err := other.Put(t.Context(), []byte("another owner's result")); err != nil {
				t.Fatal(err)
			}
			v := s.View()
			t.Cleanup(v.Close)
			return v
		}},
	} {
		t.Run(tt.name, func(t *testing.T) { agenttest.TestResultStore(t, tt.newStore) })
	}
}
