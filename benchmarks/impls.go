package benchmarks

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"

	"github.com/agentpreflight/preflight"
	googleschema "github.com/google/jsonschema-go/jsonschema"
	"github.com/gowebpki/jcs"
	santhosh "github.com/santhosh-tekuri/jsonschema/v6"
)

// Run is one measured call: bytes in, outcome out. valid is meaningful only
// for implementations that validate.
type Run func() (valid bool, err error)

// CheckImpl is one way of handling a check-request corpus case.
type CheckImpl struct {
	// Name is the sub-benchmark name, such as "santhosh_cold".
	Name string
	// Label is the name shown in tables and charts.
	Label string
	// Validates is true when the outcome says whether the body is valid.
	Validates bool
	// Prepare does the work allowed outside the timed loop (nothing for the
	// cold paths, compiling the schema for the warm ones) and returns the
	// measured call. It never keeps results between calls.
	Prepare func(c CheckCase) (Run, error)
	// NoSchemaCache: the calls run with preflight's cache of compiled
	// schemas turned off (see Within), so that every call compiles.
	NoSchemaCache bool
}

// Within runs f, which prepares and makes impl's calls, with preflight's
// cache of compiled schemas as impl needs it, and puts it back (emptied)
// afterwards.
func (impl CheckImpl) Within(f func()) {
	if impl.NoSchemaCache {
		prev := preflight.SetSchemaCacheLimits(preflight.SchemaCacheLimits{})
		defer preflight.SetSchemaCacheLimits(prev)
	}
	f()
}

// Implementation names, in the order the tables list them.
const (
	ImplPreflight     = "preflight"
	ImplPreflightWarm = "preflight_warm"
	ImplSanthoshCold  = "santhosh_cold"
	ImplGoogleCold    = "google_cold"
	ImplSanthoshWarm  = "santhosh_warm"
	ImplGoogleWarm    = "google_warm"
	ImplJCSSHA256     = "jcs_sha256"
	ImplUnmarshal     = "unmarshal"
	ImplSHA256        = "sha256"
)

// CheckImpls lists every implementation measured on the check corpus.
var CheckImpls = []CheckImpl{
	{ImplPreflight, "preflight CheckJSON, schema cache off (compiles every call)", true, preparePreflight, true},
	{ImplSanthoshCold, "santhosh-tekuri/jsonschema/v6 compile+validate", true, prepareSanthoshCold, false},
	{ImplGoogleCold, "google/jsonschema-go resolve+validate", true, prepareGoogleCold, false},
	{ImplPreflightWarm, "preflight CheckJSON, schema found in its cache", true, preparePreflightWarm, false},
	{ImplSanthoshWarm, "santhosh-tekuri precompiled, parse+validate", true, prepareSanthoshWarm, false},
	{ImplGoogleWarm, "google/jsonschema-go pre-resolved, Unmarshal+validate", true, prepareGoogleWarm, false},
	{ImplJCSSHA256, "gowebpki/jcs RFC 8785 + SHA-256 of body+schema", false, prepareJCS, false},
	{ImplUnmarshal, "floor: encoding/json Unmarshal of the request into any", false, prepareUnmarshal, false},
	{ImplSHA256, "floor: SHA-256 of the request bytes", false, prepareSHA256, false},
}

// DecideImpl is one way of handling a tool-call corpus case.
type DecideImpl struct {
	Name, Label string
	Prepare     func(c DecideCase) (Run, error)
}

// DecideImpls lists every implementation measured on the tool-call corpus.
var DecideImpls = []DecideImpl{
	{ImplPreflight, "preflight DecideJSON", func(c DecideCase) (Run, error) {
		return func() (bool, error) {
			_, err := preflight.DecideJSON(c.Request)
			return true, err
		}, nil
	}},
	{ImplUnmarshal, "floor: encoding/json Unmarshal of the request into any", func(c DecideCase) (Run, error) {
		return unmarshalRun(c.Request), nil
	}},
}

func preparePreflight(c CheckCase) (Run, error) {
	return func() (bool, error) {
		res, err := preflight.CheckJSON(c.Request)
		if err != nil {
			return false, err
		}
		return res.Valid, nil
	}, nil
}

// preparePreflightWarm makes one call, which leaves the schema compiled
// in preflight's cache, as the peers' warm paths compile theirs once. The
// measured calls parse the whole request, look the schema up (hashing and
// comparing its text), validate and hash, as a server answering the same
// tool's calls again does.
func preparePreflightWarm(c CheckCase) (Run, error) {
	run, _ := preparePreflight(c)
	if _, err := run(); err != nil {
		return nil, err
	}
	return run, nil
}

// schemaURL names the schema resource for santhosh-tekuri; an https URL
// keeps the compiler away from the file system.
const schemaURL = "https://bench.invalid/schema.json"

func santhoshCompile(schema []byte) (*santhosh.Schema, error) {
	doc, err := santhosh.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, err
	}
	c := santhosh.NewCompiler()
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	return c.Compile(schemaURL)
}

func santhoshValidate(sch *santhosh.Schema, body []byte) (bool, error) {
	inst, err := santhosh.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	return validationOutcome(sch.Validate(inst))
}

// validationOutcome turns a santhosh-tekuri validation error into
// valid=false; any other error is a failure of the run.
func validationOutcome(err error) (bool, error) {
	if err == nil {
		return true, nil
	}
	var ve *santhosh.ValidationError
	if errors.As(err, &ve) {
		return false, nil
	}
	return false, err
}

func prepareSanthoshCold(c CheckCase) (Run, error) {
	return func() (bool, error) {
		sch, err := santhoshCompile(c.Schema)
		if err != nil {
			return false, err
		}
		return santhoshValidate(sch, c.Body)
	}, nil
}

func prepareSanthoshWarm(c CheckCase) (Run, error) {
	sch, err := santhoshCompile(c.Schema)
	if err != nil {
		return nil, err
	}
	return func() (bool, error) { return santhoshValidate(sch, c.Body) }, nil
}

func googleResolve(schema []byte) (*googleschema.Resolved, error) {
	var s googleschema.Schema
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, err
	}
	return s.Resolve(nil)
}

// googleValidate parses the body and validates it. jsonschema-go reports
// every validation failure as a plain error, so an error from Validate
// means invalid; parse errors fail the run.
func googleValidate(rs *googleschema.Resolved, body []byte) (bool, error) {
	var inst any
	if err := json.Unmarshal(body, &inst); err != nil {
		return false, err
	}
	return rs.Validate(inst) == nil, nil
}

func prepareGoogleCold(c CheckCase) (Run, error) {
	return func() (bool, error) {
		rs, err := googleResolve(c.Schema)
		if err != nil {
			return false, err
		}
		return googleValidate(rs, c.Body)
	}, nil
}

func prepareGoogleWarm(c CheckCase) (Run, error) {
	rs, err := googleResolve(c.Schema)
	if err != nil {
		return nil, err
	}
	return func() (bool, error) { return googleValidate(rs, c.Body) }, nil
}

func prepareJCS(c CheckCase) (Run, error) {
	return func() (bool, error) {
		b, err := jcs.Transform(c.Body)
		if err != nil {
			return false, err
		}
		s, err := jcs.Transform(c.Schema)
		if err != nil {
			return false, err
		}
		h := sha256.New()
		h.Write(b)
		h.Write(s)
		var sum [sha256.Size]byte
		runtime.KeepAlive(h.Sum(sum[:0])) // the digest must be computed, though nobody reads it
		return true, nil
	}, nil
}

func prepareUnmarshal(c CheckCase) (Run, error) { return unmarshalRun(c.Request), nil }

func unmarshalRun(data []byte) Run {
	return func() (bool, error) {
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			return false, err
		}
		if v == nil {
			return false, fmt.Errorf("unmarshal gave null")
		}
		return true, nil
	}
}

func prepareSHA256(c CheckCase) (Run, error) {
	return func() (bool, error) {
		sum := sha256.Sum256(c.Request)
		runtime.KeepAlive(sum)
		return true, nil
	}, nil
}
