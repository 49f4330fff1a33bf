package main

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// checkOTLPEnv refuses OTLP exporter variables that the exporter would
// otherwise ignore with a line on its own logger, leaving traces going
// nowhere or without their headers: an endpoint that is not an http(s) URL
// with a host, headers that are not key=value pairs, a timeout that is not
// a whole number of milliseconds, a compression other than gzip or none.
// A header's value never appears in the error: it may be a secret.
func checkOTLPEnv(getenv func(string) string) error {
	for _, name := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
		v := getenv(name)
		if v == "" {
			continue
		}
		u, err := url.Parse(v)
		if err != nil || (!strings.EqualFold(u.Scheme, "http") && !strings.EqualFold(u.Scheme, "https")) || u.Host == "" {
			return fmt.Errorf("%s=%q is not an http(s) URL with a host, such as http://127.0.0.1:4318", name, v)
		}
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} {
		v := getenv(name)
		if v == "" {
			continue
		}
		for i, pair := range strings.Split(v, ",") {
			key, value, found := strings.Cut(pair, "=")
			_, escErr := url.PathUnescape(value)
			if !found || !isToken(strings.TrimSpace(key)) || escErr != nil {
				return fmt.Errorf("%s: entry %d of %d is not a header name, '=' and a URL-encoded value; "+
					"want comma-separated pairs such as api-key=secret,team=ops (values are not shown: they may be secrets)",
					name, i+1, strings.Count(v, ",")+1)
			}
		}
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"} {
		v := getenv(name)
		if v == "" {
			continue
		}
		if ms, err := strconv.Atoi(v); err != nil || ms < 0 {
			return fmt.Errorf("%s=%q is not a whole number of milliseconds such as 10000", name, v)
		}
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_COMPRESSION", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION"} {
		if v := getenv(name); v != "" && v != "gzip" && v != "none" {
			return fmt.Errorf("%s=%q is not supported: want gzip or none", name, v)
		}
	}
	return nil
}

// isToken reports whether s is a non-empty HTTP token (RFC 9110), the
// form of a header name.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}
