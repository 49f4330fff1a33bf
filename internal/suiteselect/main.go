// Command suiteselect refreshes testdata/jsonschema-suite from a checkout of
// the official JSON-Schema-Test-Suite: it reads every non-optional file of
// tests/draft2020-12/, keeps the groups whose schemas use only the 12
// keywords preflight supports, and writes draft2020-12.json and
// boolean-schemas.json. The rule is in testdata/jsonschema-suite/README.md.
//
//	git clone https://github.com/json-schema-org/JSON-Schema-Test-Suite /tmp/suite
//	go run ./internal/suiteselect -suite /tmp/suite -out testdata/jsonschema-suite
//
// Schemas and data are copied as raw bytes (re-indented), so numbers keep
// upstream's spelling; the optional "comment" members are dropped, and so is
// a top-level "$schema" naming the standard 2020-12 meta-schema.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// keywords are the schema keywords preflight supports, in the order the
// output lists the files named after them.
var keywords = []string{"type", "required", "properties", "items", "enum", "const",
	"minimum", "maximum", "minLength", "maxLength", "pattern", "additionalProperties"}

// metaSchema is the only "$schema" a kept group may name.
const metaSchema = "https://json-schema.org/draft/2020-12/schema"

// group is one group of a suite file, as written out.
type group struct {
	File        string          `json:"file"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Tests       []test          `json:"tests"`
}

type test struct {
	Description string          `json:"description"`
	Data        json.RawMessage `json:"data"`
	Valid       bool            `json:"valid"`
}

// errUsage is a mistake on the command line; main exits 2 for it.
var errUsage = errors.New("usage: suiteselect -suite DIR [-out DIR]")

// main exits 0 on success and on -h, 2 on a command-line mistake (after the
// flag package has printed it) and 1 on any other failure.
func main() {
	err := run(os.Args[1:], os.Stdout)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "suiteselect:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("suiteselect", flag.ContinueOnError)
	fs.SetOutput(stdout)
	suite := fs.String("suite", "", "a checkout of JSON-Schema-Test-Suite")
	out := fs.String("out", filepath.Join("testdata", "jsonschema-suite"), "where to write the two files")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if *suite == "" || fs.NArg() > 0 {
		return errUsage
	}
	plain, boolean, err := selectDir(filepath.Join(*suite, "tests", "draft2020-12"))
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name   string
		groups []group
	}{{"draft2020-12.json", plain}, {"boolean-schemas.json", boolean}} {
		name, groups := f.name, f.groups
		b, err := encode(groups)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(*out, name), b, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: %d groups, %d tests\n", name, len(groups), countTests(groups))
	}
	return nil
}

func countTests(groups []group) int {
	n := 0
	for _, g := range groups {
		n += len(g.Tests)
	}
	return n
}

// selectDir reads every *.json file of dir (not its subdirectories) in
// fileOrder and returns the kept groups, split into those without and with
// boolean schemas.
func selectDir(dir string) (plain, boolean []group, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") {
			names = append(names, e.Name())
		}
	}
	sort.Slice(names, func(i, j int) bool { return fileOrder(names[i], names[j]) })
	for _, name := range names {
		src, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, nil, err
		}
		p, b, err := selectFile("draft2020-12/"+name, src)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		plain, boolean = append(plain, p...), append(boolean, b...)
	}
	return plain, boolean, nil
}

// fileOrder puts the files named after a supported keyword first, in
// keyword order, then the rest by name.
func fileOrder(a, b string) bool {
	ia := slices.Index(keywords, strings.TrimSuffix(a, ".json"))
	ib := slices.Index(keywords, strings.TrimSuffix(b, ".json"))
	switch {
	case ia >= 0 && ib >= 0:
		return ia < ib
	case ia >= 0 || ib >= 0:
		return ia >= 0
	default:
		return a < b
	}
}

// selectFile applies the selection rule to the groups of one suite file.
func selectFile(file string, src []byte) (plain, boolean []group, err error) {
	var groups []struct {
		Description string          `json:"description"`
		Schema      json.RawMessage `json:"schema"`
		Tests       []test          `json:"tests"`
	}
	if err := json.Unmarshal(src, &groups); err != nil {
		return nil, nil, err
	}
	for _, g := range groups {
		schema, ok, err := dropMetaSchema(g.Schema)
		if err != nil {
			return nil, nil, fmt.Errorf("group %q: %w", g.Description, err)
		}
		if !ok {
			continue
		}
		usesBoolean, ok := supported(schema, true)
		if !ok {
			continue
		}
		kept := group{File: file, Description: g.Description, Schema: schema, Tests: g.Tests}
		if usesBoolean {
			boolean = append(boolean, kept)
		} else {
			plain = append(plain, kept)
		}
	}
	return plain, boolean, nil
}

// dropMetaSchema removes a top-level "$schema" naming the standard
// meta-schema; ok is false when it names another one.
func dropMetaSchema(schema json.RawMessage) (json.RawMessage, bool, error) {
	var members map[string]json.RawMessage
	if json.Unmarshal(schema, &members) != nil {
		return schema, true, nil // a boolean schema
	}
	raw, has := members["$schema"]
	if !has {
		return schema, true, nil
	}
	var uri string
	if err := json.Unmarshal(raw, &uri); err != nil || uri != metaSchema {
		return nil, false, nil
	}
	// Rebuild the object without "$schema", keeping the members' order and
	// bytes.
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil {
		return nil, false, err
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false, err
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, false, err
		}
		name := tok.(string)
		if name == "$schema" {
			continue
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(name)
		b.Write(key)
		b.WriteByte(':')
		b.Write(value)
	}
	b.WriteByte('}')
	return b.Bytes(), true, nil
}

// supported reports whether schema uses only the supported keywords at
// every schema position, and whether it uses a boolean schema anywhere but
// as the value of additionalProperties.
func supported(schema json.RawMessage, top bool) (usesBoolean, ok bool) {
	if t := bytes.TrimSpace(schema); bytes.Equal(t, []byte("true")) || bytes.Equal(t, []byte("false")) {
		return true, true
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(schema, &members); err != nil {
		return false, false
	}
	for name, value := range members {
		if !slices.Contains(keywords, name) {
			return false, false
		}
		var sub []json.RawMessage
		switch name {
		case "properties":
			var props map[string]json.RawMessage
			if err := json.Unmarshal(value, &props); err != nil {
				return false, false
			}
			for _, p := range props {
				sub = append(sub, p)
			}
		case "items":
			if t := bytes.TrimSpace(value); len(t) > 0 && t[0] == '[' {
				return false, false // the array form is prefixItems in 2020-12
			}
			sub = append(sub, value)
		case "additionalProperties":
			if t := bytes.TrimSpace(value); len(t) > 0 && t[0] == '{' {
				sub = append(sub, value)
			}
		}
		for _, s := range sub {
			b, ok := supported(s, false)
			if !ok {
				return false, false
			}
			usesBoolean = usesBoolean || b
		}
	}
	return usesBoolean, true
}

// encode writes groups as an indented JSON array, with a final newline.
func encode(groups []group) ([]byte, error) {
	if groups == nil {
		return nil, errors.New("no group qualifies; is -suite a JSON-Schema-Test-Suite checkout?")
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(groups); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
