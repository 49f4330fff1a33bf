package redisledger

import (
	"encoding/binary"
	"math"
	"strconv"
)

// A packer builds the one argument a script takes (ARGV[1]), read in Lua
// with struct.unpack: a string is its length (4 bytes, little-endian) and
// its bytes (format I4c0), a number a little-endian double (format d),
// exact for the integers the store passes (below 2^53).
type packer []byte

// str appends s.
func (p packer) str(s string) packer {
	p = binary.LittleEndian.AppendUint32(p, uint32(len(s)))
	return append(p, s...)
}

// num appends n.
func (p packer) num(n int64) packer {
	return binary.LittleEndian.AppendUint64(p, math.Float64bits(float64(n)))
}

// limb appends a limb given as decimal text (see limbsOf); "" is -1.
func (p packer) limb(s string) packer {
	if s == "" {
		return p.num(-1)
	}
	n, _ := strconv.ParseInt(s, 10, 64)
	return p.num(n)
}
