package strictjson

import (
	"bytes"
	"encoding/json"
	"testing"
)

// tree is a plain copy of a parsed Value, for comparing whole documents in
// tests and for building reordered documents.
type tree struct {
	Kind       Kind
	Bool       bool
	Str        string
	Items      []tree
	Members    []treeMember
	Start, End int
}

type treeMember struct {
	Key   string
	Value tree
}

// toTree copies v into a tree.
func toTree(v Value) tree {
	t := tree{Kind: v.Kind(), Bool: v.Bool(), Str: v.Str(), Start: v.Start(), End: v.End()}
	switch t.Kind {
	case Array:
		t.Items = []tree{}
		for it := v.Iter(); it.Next(); {
			t.Items = append(t.Items, toTree(it.Value()))
		}
	case Object:
		t.Members = []treeMember{}
		for it := v.Iter(); it.Next(); {
			t.Members = append(t.Members, treeMember{it.Key(), toTree(it.Value())})
		}
	}
	return t
}

// writeTree writes t as JSON, numbers as their text.
func writeTree(b *bytes.Buffer, t tree) {
	switch t.Kind {
	case Null:
		b.WriteString("null")
	case Bool:
		if t.Bool {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case Number:
		b.WriteString(t.Str)
	case String:
		s, _ := json.Marshal(t.Str)
		b.Write(s)
	case Array:
		b.WriteByte('[')
		for i, x := range t.Items {
			if i > 0 {
				b.WriteByte(',')
			}
			writeTree(b, x)
		}
		b.WriteByte(']')
	case Object:
		b.WriteByte('{')
		for i, m := range t.Members {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(m.Key)
			b.Write(k)
			b.WriteByte(':')
			writeTree(b, m.Value)
		}
		b.WriteByte('}')
	}
}

// fromTree parses the JSON text of t.
func fromTree(tb testing.TB, t tree) Value {
	tb.Helper()
	var b bytes.Buffer
	writeTree(&b, t)
	v, err := Parse(b.Bytes(), Limits{})
	if err != nil {
		tb.Fatalf("fromTree: %v", err)
	}
	return v
}

// mapMembers returns a deep copy of t with every object's members put in
// the order perm gives.
func mapMembers(t tree, perm func([]treeMember) []treeMember) tree {
	switch t.Kind {
	case Array:
		items := make([]tree, len(t.Items))
		for i := range t.Items {
			items[i] = mapMembers(t.Items[i], perm)
		}
		t.Items = items
	case Object:
		ms := make([]treeMember, len(t.Members))
		for i, m := range t.Members {
			ms[i] = treeMember{m.Key, mapMembers(m.Value, perm)}
		}
		t.Members = perm(ms)
	}
	return t
}

func reversed(ms []treeMember) []treeMember {
	out := make([]treeMember, len(ms))
	for i, m := range ms {
		out[len(ms)-1-i] = m
	}
	return out
}

func rotated(ms []treeMember) []treeMember {
	n := len(ms)
	out := make([]treeMember, n)
	for i, m := range ms {
		out[(i+n-1)%n] = m
	}
	return out
}
