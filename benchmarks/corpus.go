package benchmarks

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
)

// CheckCase is one POST /check-request corpus file, with the proposed body
// and the schema extracted once so that the peers receive exactly the bytes
// they would validate. The zero value is not a usable case.
type CheckCase struct {
	// Name is the file name without "check_" and ".json", such as
	// "web_search_valid".
	Name string
	// Request is the whole file: the bytes preflight receives.
	Request []byte
	// Body and Schema are the request's body and schema members as they
	// appear in the file (not re-encoded).
	Body, Schema []byte
	// WantValid is true for the *_valid files.
	WantValid bool
}

// DecideCase is one POST /v0.2/preflight/tool-call corpus file.
type DecideCase struct {
	// Name is the file name without "decide_" and ".json", such as
	// "history_010".
	Name string
	// Request is the whole file.
	Request []byte
}

// CorpusDir returns the directory of the shared corpus, found from this
// source file's location so that it works from any working directory of
// this module.
func CorpusDir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return filepath.Join("..", "testdata", "bench")
	}
	return filepath.Join(filepath.Dir(file), "..", "testdata", "bench")
}

// LoadCheckCases reads every check_*.json file of the corpus, sorted by
// name. It fails if the corpus is missing or a file lacks a body or schema.
func LoadCheckCases() ([]CheckCase, error) {
	files, err := corpusFiles("check_*.json")
	if err != nil {
		return nil, err
	}
	out := make([]CheckCase, 0, len(files))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var doc struct {
			Request struct {
				Body json.RawMessage `json:"body"`
			} `json:"request"`
			Schema json.RawMessage `json:"schema"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if len(doc.Request.Body) == 0 || len(doc.Schema) == 0 {
			return nil, fmt.Errorf("%s: expected request.body and schema members", f)
		}
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "check_"), ".json")
		out = append(out, CheckCase{
			Name:      name,
			Request:   data,
			Body:      doc.Request.Body,
			Schema:    doc.Schema,
			WantValid: strings.HasSuffix(name, "_valid"),
		})
	}
	return out, nil
}

// LoadDecideCases reads every decide_*.json file of the corpus, sorted by
// name.
func LoadDecideCases() ([]DecideCase, error) {
	files, err := corpusFiles("decide_*.json")
	if err != nil {
		return nil, err
	}
	out := make([]DecideCase, 0, len(files))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "decide_"), ".json")
		out = append(out, DecideCase{Name: name, Request: data})
	}
	return out, nil
}

func corpusFiles(pattern string) ([]string, error) {
	dir := CorpusDir()
	files, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no corpus files match %s in %s", pattern, dir)
	}
	sort.Strings(files)
	return files, nil
}
