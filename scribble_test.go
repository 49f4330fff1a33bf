package preflight

// Every test of the package runs with CheckJSON's released document copies
// overwritten, so that a result or error that still pointed into one
// would differ from what the golden files, the fuzz targets' second
// opinions and the Go-value path say.
func init() { scribbleReleased = true }
