package main

import (
	"fmt"
	"io"
	"os"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/tools"
)

// maxCatalogFileBytes bounds a catalog file (--operations): 4 MiB holds
// over a hundred operations with a schema of the largest size accepted
// (32 KiB) each. The file is read once at start, and never past the limit.
const maxCatalogFileBytes = 4 << 20

// loadCatalog reads the catalog file named by --operations; "" means the
// built-in operations (nil). The error lists every problem of the file,
// one per line, each with its JSON Pointer.
func loadCatalog(file string) (*preflight.Catalog, error) {
	if file == "" {
		return nil, nil
	}
	data, err := readCatalogFile(file)
	if err != nil {
		return nil, err
	}
	// One format with the proxy's: a tool-spec file, whose priceUsd,
	// ttlSeconds and retryCap the server accepts and leaves to the proxy.
	c, _, err := tools.DecodeSpecFile(data)
	if err != nil {
		return nil, describeFileError("--operations "+file, err)
	}
	return c, nil
}

// readCatalogFile reads the file named by --operations. It must be a
// regular file (not a FIFO, device or directory, which could block or never
// end) of at most maxCatalogFileBytes.
func readCatalogFile(file string) ([]byte, error) {
	limit := fmt.Sprintf("a regular file of at most %d bytes (4 MiB)", maxCatalogFileBytes)
	regular := func(info os.FileInfo) error {
		if info.Mode().IsRegular() {
			return nil
		}
		return fmt.Errorf("--operations %s is not a regular file (it is a %s); want %s", file, fileKind(info.Mode()), limit)
	}
	// Stat before opening: opening a FIFO for reading waits for a writer.
	info, err := os.Stat(file)
	if err != nil {
		return nil, fmt.Errorf("--operations: %w", err)
	}
	if err := regular(info); err != nil {
		return nil, err
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("--operations: %w", err)
	}
	defer f.Close()
	if info, err = f.Stat(); err != nil {
		return nil, fmt.Errorf("--operations: %w", err)
	}
	if err := regular(info); err != nil { // replaced since the first look
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, maxCatalogFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("--operations: %w", err)
	}
	if len(data) > maxCatalogFileBytes {
		return nil, fmt.Errorf("--operations %s is larger than %d bytes; want %s", file, maxCatalogFileBytes, limit)
	}
	return data, nil
}

// fileKind names the kind of a file that is not regular.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&os.ModeNamedPipe != 0:
		return "FIFO"
	case m&os.ModeSocket != 0:
		return "socket"
	case m&os.ModeDevice != 0:
		return "device"
	}
	return "special file"
}
