package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/agentpreflight/preflight/receipt"
	"github.com/agentpreflight/preflight/strictjson"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// The exit statuses.
const (
	exitOK       = 0 // verified
	exitMismatch = 1 // the receipt does not verify
	exitError    = 2 // could not verify: bad usage, an unreadable file, a request the library refuses
)

const usage = `usage: preflight verify --request FILE --response FILE --receipt FILE --keys FILE [--operations FILE] [--prev HASH] [--json]
       preflight verify --meta FILE --keys FILE [--operations FILE] [--prev HASH] [--json]

Checks a preflight receipt offline: the signature, the request it was signed
for, and the answer, recomputed with the library. "go doc
github.com/agentpreflight/preflight/cmd/preflight" has the details.
`

// maxInput bounds each file read: requests and answers are at most 64 KiB
// on the server; a catalog file at most 4 MiB.
const maxInput = 4 << 20

// run runs the command line args and returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "verify" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprint(stdout, usage)
			return exitOK
		}
		fmt.Fprint(stderr, usage)
		return exitError
	}
	fs := flag.NewFlagSet("preflight verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var requestFile, responseFile, receiptFile, metaFile, keysFile, opsFile, prev string
	var asJSON bool
	fs.StringVar(&requestFile, "request", "", "the request `file`")
	fs.StringVar(&responseFile, "response", "", "the response `file`")
	fs.StringVar(&receiptFile, "receipt", "", "the receipt `file`")
	fs.StringVar(&metaFile, "meta", "", "a `file` holding an MCP result, or its _meta, signed by a guard (request, response and receipt in one)")
	fs.StringVar(&keysFile, "keys", "", "the public keys `file` (JWKS or PEM)")
	fs.StringVar(&opsFile, "operations", "", "the catalog `file` the server decided with")
	fs.StringVar(&prev, "prev", "", "the `hash` of the previous receipt of the chain")
	fs.BoolVar(&asJSON, "json", false, "print the verification as JSON")
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitError
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "preflight verify: "+format+"\n", a...)
		return exitError
	}
	if fs.NArg() > 0 {
		return fail("unexpected arguments %q", fs.Args())
	}
	if metaFile != "" && (requestFile != "" || responseFile != "" || receiptFile != "") {
		return fail("--meta gives the request, the response and the receipt: give it alone, or --request, --response and --receipt")
	}
	if keysFile == "" || metaFile == "" && (requestFile == "" || responseFile == "" || receiptFile == "") {
		return fail("--request, --response, --receipt (or --meta) and --keys are all required")
	}
	if prev != "" && !receipt.IsHash(prev) {
		return fail("--prev %q is not a receipt hash (64 lower-case hex digits)", prev)
	}
	stdinUsed := false
	read := func(flagName, file string) ([]byte, error) {
		r := io.Reader(nil)
		if file == "-" {
			if stdinUsed {
				return nil, fmt.Errorf("%s -: standard input is already read for another file", flagName)
			}
			stdinUsed, r = true, stdin
		} else {
			// Stat before opening: opening a FIFO to read waits for a
			// writer, for ever if none comes.
			if info, err := os.Stat(file); err == nil && !info.Mode().IsRegular() {
				return nil, fmt.Errorf("%s %s is not a regular file", flagName, file)
			}
			f, err := os.Open(file)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", flagName, err)
			}
			defer f.Close()
			if info, err := f.Stat(); err == nil && !info.Mode().IsRegular() {
				return nil, fmt.Errorf("%s %s is not a regular file", flagName, file)
			}
			r = f
		}
		data, err := io.ReadAll(io.LimitReader(r, maxInput+1))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flagName, err)
		}
		if len(data) > maxInput {
			return nil, fmt.Errorf("%s %s is over %d bytes", flagName, file, maxInput)
		}
		return data, nil
	}
	var request, response, rcData []byte
	var err error
	if metaFile != "" {
		data, err := read("--meta", metaFile)
		if err != nil {
			return fail("%v", err)
		}
		if request, response, rcData, err = fromMeta(data); err != nil {
			return fail("--meta %s: %v", metaFile, err)
		}
		receiptFile = metaFile
	} else {
		if request, err = read("--request", requestFile); err != nil {
			return fail("%v", err)
		}
		if response, err = read("--response", responseFile); err != nil {
			return fail("%v", err)
		}
		if rcData, err = read("--receipt", receiptFile); err != nil {
			return fail("%v", err)
		}
	}
	keysData, err := read("--keys", keysFile)
	if err != nil {
		return fail("%v", err)
	}
	rc, err := receipt.Parse(bytes.TrimSpace(rcData))
	if err != nil {
		return fail("--receipt %s: %v", receiptFile, err)
	}
	keys, err := receipt.ParseKeys(keysData)
	if err != nil {
		return fail("--keys %s: %v", keysFile, err)
	}
	var catalog *preflight.Catalog
	if opsFile != "" {
		data, err := read("--operations", opsFile)
		if err != nil {
			return fail("%v", err)
		}
		if catalog, _, err = tools.DecodeSpecFile(data); err != nil {
			return fail("--operations %s: %v", opsFile, err)
		}
	}
	v, err := receipt.Verify(request, response, rc, keys, &receipt.VerifyOptions{Catalog: catalog, Prev: prev})
	if err != nil {
		return fail("%v", err)
	}
	if asJSON {
		b, _ := json.MarshalIndent(v, "", "  ")
		fmt.Fprintf(stdout, "%s\n", b)
	} else {
		printText(stdout, v)
	}
	if !v.OK() {
		return exitMismatch
	}
	return exitOK
}

// fromMeta reads the request, the response and the receipt from an MCP
// result signed by a guard (agent/mcpguard, preflightd proxy), or from its
// _meta object.
func fromMeta(data []byte) (request, response, rc []byte, err error) {
	v, err := strictjson.Parse(data, strictjson.Limits{})
	if err != nil {
		return nil, nil, nil, err
	}
	if m, ok := v.Get("_meta"); ok {
		v = m
	}
	get := func(key string) []byte {
		m, ok := v.Get(key)
		if !ok {
			return nil
		}
		return data[m.Start():m.End()]
	}
	request, response, rc = get(receipt.RequestMetaKey), get(receipt.ResponseMetaKey), get(receipt.MetaKey)
	if v.Kind() != strictjson.Object || request == nil || response == nil || rc == nil {
		return nil, nil, nil, fmt.Errorf("want an object (or a result whose _meta is one) with the members %q, %q and %q", receipt.MetaKey, receipt.RequestMetaKey, receipt.ResponseMetaKey)
	}
	return request, response, rc, nil
}

// printText prints a verification for a person.
func printText(w io.Writer, v *receipt.Verification) {
	if v.OK() {
		fmt.Fprintf(w, "verified: the %s was signed by key %s and the library gives exactly this answer for the request\n", v.Kind, v.KeyID)
	} else {
		fmt.Fprintf(w, "NOT VERIFIED: %d finding(s) for the %s receipt of key %s\n", len(v.Findings), v.Kind, v.KeyID)
		for _, f := range v.Findings {
			fmt.Fprintf(w, "  %s at %s: %s", f.Code, f.Path, f.Message)
			if f.Want != "" || f.Got != "" {
				fmt.Fprintf(w, " (want %s, got %s)", orAbsent(f.Want), orAbsent(f.Got))
			}
			fmt.Fprintln(w)
		}
	}
	if v.Prev != "" {
		fmt.Fprintf(w, "prev: %s\n", v.Prev)
	}
	fmt.Fprintf(w, "hash: %s\n", v.Hash)
}

func orAbsent(s string) string {
	if s == "" {
		return "absent"
	}
	return s
}
