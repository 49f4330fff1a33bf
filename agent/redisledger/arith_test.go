package redisledger

import (
	"context"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestLuaArithmetic checks the scripts' decimal-text arithmetic (limbs of
// 14 digits) against math/big on random and edge values up to 60 digits:
// carries and borrows across limbs, zeros, and differences that would be
// negative.
func TestLuaArithmetic(t *testing.T) {
	p := startRedis(t)
	c := p.client(t)
	script := redis.NewScript(prelude + `
local a, b = ARGV[4], ARGV[5]
return {add(a, b), sub(a, b) or 'neg', tostring(cmp(a, b))}
`)
	rng := rand.New(rand.NewPCG(1, 2))
	digits := func() string {
		n := 1 + rng.IntN(60)
		var sb strings.Builder
		for i := range n {
			d := byte('0' + rng.IntN(10))
			if i == 0 && d == '0' && n > 1 {
				d = '1'
			}
			if rng.IntN(4) == 0 {
				d = '9' // long runs of nines carry across limbs
			}
			sb.WriteByte(d)
		}
		return sb.String()
	}
	cases := [][2]string{{"0", "0"}, {"99999999999999", "1"}, {"100000000000000", "1"}, {"1", "100000000000000"},
		{"100000000000000000000000000000", "99999999999999999999999999999"}, {"5", "5"}, {"0", "7"}}
	for range 300 {
		cases = append(cases, [2]string{digits(), digits()})
	}
	for _, tc := range cases {
		v, err := script.Run(context.Background(), c, []string{"a{x}", "b{x}", "c{x}"}, "", "0", "x", tc[0], tc[1]).StringSlice()
		if err != nil {
			t.Fatal(err)
		}
		x, _ := new(big.Int).SetString(tc[0], 10)
		y, _ := new(big.Int).SetString(tc[1], 10)
		wantSum := new(big.Int).Add(x, y).String()
		wantDiff := "neg"
		if d := new(big.Int).Sub(x, y); d.Sign() >= 0 {
			wantDiff = d.String()
		}
		wantCmp := []string{"-1", "0", "1"}[x.Cmp(y)+1]
		if v[0] != wantSum || v[1] != wantDiff || v[2] != wantCmp {
			t.Errorf("%s, %s: add %s sub %s cmp %s; want %s, %s, %s", tc[0], tc[1], v[0], v[1], v[2], wantSum, wantDiff, wantCmp)
		}
	}
}
