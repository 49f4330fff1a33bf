package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/agentpreflight/preflight"
)

// loadCatalog reads the catalog file named by --operations; "" means the
// built-in operations (nil). The error lists every problem of the file,
// one per line, each with its JSON Pointer.
func loadCatalog(file string) (*preflight.Catalog, error) {
	if file == "" {
		return nil, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--operations: %w", err)
	}
	c, err := preflight.DecodeCatalog(data)
	if err == nil {
		return c, nil
	}
	var e *preflight.Error
	if !errors.As(err, &e) {
		return nil, fmt.Errorf("--operations %s: %w", file, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "--operations %s: %s: %s", file, e.Code, e.Message)
	for _, d := range e.Details {
		at := d.Path
		if at == "" {
			at = "(the whole file)"
		}
		fmt.Fprintf(&b, "\n  %s: %s (%s)", at, d.Message, d.Code)
	}
	return nil, errors.New(b.String())
}
