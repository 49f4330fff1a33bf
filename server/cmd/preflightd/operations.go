package main

import (
	"fmt"
	"os"

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
	if err != nil {
		return nil, describeFileError("--operations "+file, err)
	}
	return c, nil
}
