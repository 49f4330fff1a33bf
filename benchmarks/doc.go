// Package benchmarks compares preflight with general-purpose JSON Schema
// libraries and with the cost floors of parsing and hashing, over the shared
// corpus in ../testdata/bench.
//
// It lives in its own module so that the peers it measures never become
// dependencies of the library. The package holds the corpus loader and the
// implementations under test; the benchmarks themselves are in its test
// files, the loopback load generator in package load and the generator of
// BENCHMARKS.md in package report (run it with cmd/report).
package benchmarks
