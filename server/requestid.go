package server

import "github.com/agentpreflight/preflight/server/internal/reqid"

// headerRequestID names the request id header: read from a request when its
// value is sane, always set on the response.
const headerRequestID = reqid.Header

// requestID returns the incoming id when it is sane, else a fresh random
// one (see reqid.New).
func requestID(incoming string) string { return reqid.New(incoming) }

func saneRequestID(s string) bool { return reqid.Sane(s) }
