package receipt_test

import "encoding/base64"

func b64Decode(s string) ([]byte, error) { return base64.RawURLEncoding.DecodeString(s) }
