// Package identity carries who is calling through a request's context:
// the proxy's authentication sets the principal, and everything keyed on
// a caller (budgets, histories, saved results, tool filters, logs) reads
// it from there. Without authentication every caller is Anonymous.
package identity

import "context"

// Anonymous is the principal of a caller when no authentication is
// configured.
const Anonymous = "anonymous"

type key struct{}

// WithPrincipal returns ctx carrying principal p.
func WithPrincipal(ctx context.Context, p string) context.Context {
	return context.WithValue(ctx, key{}, p)
}

// Principal returns the principal ctx carries, or Anonymous.
func Principal(ctx context.Context) string {
	if p, ok := ctx.Value(key{}).(string); ok && p != "" {
		return p
	}
	return Anonymous
}
