package main

import (
	"fmt"
	"io"
	"os"

	"github.com/agentpreflight/preflight/receipt"
)

// maxKeyFileBytes bounds a signing key file; a PEM Ed25519 key is 119 bytes.
const maxKeyFileBytes = 64 << 10

// loadSigningKey reads the receipt signing key file named by flag (see
// receipt.ParseSigningKey); "" means no receipts. The file must be a
// regular file of at most 64 KiB; the key itself never appears in an error.
func loadSigningKey(flag, file string) (*receipt.Signer, error) {
	if file == "" {
		return nil, nil
	}
	info, err := os.Stat(file) // before opening: opening a FIFO waits for a writer
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s %s is not a regular file", flag, file)
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	if len(data) > maxKeyFileBytes {
		return nil, fmt.Errorf("%s %s is over %d bytes; want a PEM key file", flag, file, maxKeyFileBytes)
	}
	s, err := receipt.ParseSigningKey(data)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, file, err)
	}
	return s, nil
}
