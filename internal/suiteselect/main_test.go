package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestUsage(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"-h"}, &out); !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), "-suite") {
		t.Errorf("-h: err %v, output %q; want flag.ErrHelp and the flags", err, out.String())
	}
	for _, args := range [][]string{{}, {"-nope"}, {"-suite", "a", "b"}} {
		if err := run(args, io.Discard); !errors.Is(err, errUsage) {
			t.Errorf("run(%q) = %v, want the usage error", args, err)
		}
	}
}

// TestSelect runs the selection over a small suite written here, with one
// group for each rule.
func TestSelect(t *testing.T) {
	suite := t.TempDir()
	dir := filepath.Join(suite, "tests", "draft2020-12")
	if err := os.MkdirAll(filepath.Join(dir, "optional"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"zeta.json": `[{"description":"kept from a later file","schema":{"const":1.0},"tests":[{"description":"t","data":1,"valid":true}]}]`,
		"minimum.json": `[
  {"description":"kept, standard $schema removed, comment dropped","schema":{"$schema":"https://json-schema.org/draft/2020-12/schema","minimum":1.10},
   "tests":[{"description":"t","comment":"upstream note","data":-0.0,"valid":false}]},
  {"description":"custom meta-schema","schema":{"$schema":"https://example.com/meta","minimum":1},"tests":[]},
  {"description":"another keyword","schema":{"minimum":1,"$comment":"x"},"tests":[]}
]`,
		"items.json": `[
  {"description":"array items","schema":{"items":[{"type":"integer"}]},"tests":[]},
  {"description":"boolean items","schema":{"items":false},"tests":[{"description":"t","data":[],"valid":true}]},
  {"description":"nested unsupported","schema":{"items":{"properties":{"a":{"format":"email"}}}},"tests":[]},
  {"description":"additionalProperties false is plain","schema":{"additionalProperties":false,"properties":{"$ref":{"type":"string"}}},"tests":[]}
]`,
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "optional", "format.json"), []byte(`[{"description":"optional","schema":{},"tests":[]}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	var log bytes.Buffer
	if err := run([]string{"-suite", suite, "-out", out}, &log); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	wantPlain := `[
  {
    "file": "draft2020-12/items.json",
    "description": "additionalProperties false is plain",
    "schema": {
      "additionalProperties": false,
      "properties": {
        "$ref": {
          "type": "string"
        }
      }
    },
    "tests": []
  },
  {
    "file": "draft2020-12/minimum.json",
    "description": "kept, standard $schema removed, comment dropped",
    "schema": {
      "minimum": 1.10
    },
    "tests": [
      {
        "description": "t",
        "data": -0.0,
        "valid": false
      }
    ]
  },
  {
    "file": "draft2020-12/zeta.json",
    "description": "kept from a later file",
    "schema": {
      "const": 1.0
    },
    "tests": [
      {
        "description": "t",
        "data": 1,
        "valid": true
      }
    ]
  }
]
`
	if diff := cmp.Diff(wantPlain, read("draft2020-12.json")); diff != "" {
		t.Errorf("draft2020-12.json (-want +got):\n%s", diff)
	}
	wantBoolean := `[
  {
    "file": "draft2020-12/items.json",
    "description": "boolean items",
    "schema": {
      "items": false
    },
    "tests": [
      {
        "description": "t",
        "data": [],
        "valid": true
      }
    ]
  }
]
`
	if diff := cmp.Diff(wantBoolean, read("boolean-schemas.json")); diff != "" {
		t.Errorf("boolean-schemas.json (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("draft2020-12.json: 3 groups, 2 tests\nboolean-schemas.json: 1 groups, 1 tests\n", log.String()); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
}
