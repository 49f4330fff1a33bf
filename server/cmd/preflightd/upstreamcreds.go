package main

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/agentpreflight/preflight/server/internal/mcpproxy"
)

// headerSource is one --upstream-header: a header whose value comes from
// an environment variable or a file, never from the command line.
type headerSource struct {
	name string // canonical header name
	env  string // the variable, or ""
	file string // the file, or ""
}

// headersFlag collects --upstream-header values.
type headersFlag struct{ list *[]headerSource }

func (f headersFlag) String() string {
	if f.list == nil {
		return ""
	}
	var parts []string
	for _, h := range *f.list {
		parts = append(parts, h.name)
	}
	return strings.Join(parts, ",")
}

func (f headersFlag) Set(s string) error {
	name, src, ok := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" || strings.ContainsAny(name, " \t:") {
		return fmt.Errorf("--upstream-header %q: want NAME=env:VARIABLE or NAME=file:PATH", s)
	}
	h := headerSource{name: http.CanonicalHeaderKey(name)}
	switch kind, ref, _ := strings.Cut(src, ":"); {
	case kind == "env" && ref != "":
		h.env = ref
	case kind == "file" && ref != "":
		h.file = ref
	default:
		// Never the value itself: a command line is visible to every user
		// of the machine (ps) and lands in shell histories.
		return fmt.Errorf("--upstream-header %s: the value must come from env:VARIABLE or file:PATH, not the command line", h.name)
	}
	*f.list = append(*f.list, h)
	return nil
}

// upstreamCredentials returns the proxy's credentials for the upstream, or
// nil when none are configured. Every environment variable and file is
// read once here, so that a missing one stops the start; a file is read
// again when it changes.
func (o proxyOptions) upstreamCredentials(getenv func(string) string) (*mcpproxy.Credentials, error) {
	if !o.forwardAuth && len(o.upstreamHeaders) == 0 {
		return nil, nil
	}
	if o.upstream == "" {
		return nil, errors.New("proxy: --upstream-header and --upstream-forward-authorization apply to --upstream URL; a command upstream takes its credentials from its environment")
	}
	var problems []string
	static := http.Header{}
	var files []*watchedFile
	for _, h := range o.upstreamHeaders {
		if o.forwardAuth && h.name == "Authorization" {
			problems = append(problems, "--upstream-header Authorization and --upstream-forward-authorization both set Authorization: choose one")
			continue
		}
		if h.env != "" {
			v := getenv(h.env)
			if v == "" {
				problems = append(problems, fmt.Sprintf("--upstream-header %s: the environment variable %s is empty or not set", h.name, h.env))
				continue
			}
			static.Set(h.name, v)
			continue
		}
		wf := &watchedFile{header: h.name, path: h.file}
		if _, err := wf.value(); err != nil {
			problems = append(problems, fmt.Sprintf("--upstream-header %s: %v", h.name, err))
			continue
		}
		files = append(files, wf)
	}
	if len(problems) > 0 {
		return nil, errors.New("proxy: " + strings.Join(problems, "\nproxy: "))
	}
	c := &mcpproxy.Credentials{ForwardAuthorization: o.forwardAuth}
	if len(static) > 0 || len(files) > 0 {
		c.Headers = func() (http.Header, error) {
			h := static.Clone()
			for _, f := range files {
				v, err := f.value()
				if err != nil {
					return nil, err
				}
				h.Set(f.header, v)
			}
			return h, nil
		}
	}
	return c, nil
}

// watchedFile is a header value kept in a file: read again when its size
// or modification time changes, its surrounding white space trimmed.
type watchedFile struct {
	header, path string
	mu           sync.Mutex
	mod          time.Time
	size         int64
	v            string
}

func (w *watchedFile) value() (string, error) {
	st, err := os.Stat(w.path)
	if err != nil {
		return "", err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.v != "" && st.ModTime().Equal(w.mod) && st.Size() == w.size {
		return w.v, nil
	}
	if st.Size() > 64<<10 {
		return "", fmt.Errorf("%s: larger than 64 KiB", w.path)
	}
	b, err := os.ReadFile(w.path)
	if err != nil {
		return "", err
	}
	v := string(bytes.TrimSpace(b))
	if v == "" || strings.ContainsAny(v, "\r\n") {
		return "", fmt.Errorf("%s: want one non-empty line", w.path)
	}
	w.v, w.mod, w.size = v, st.ModTime(), st.Size()
	return v, nil
}
