package redisledger

import (
	"context"
	"fmt"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestLuaArithmetic checks the scripts' money arithmetic (two integer
// limbs, hi×10^15 + lo attodollars) against math/big on random and edge
// values up to the ledger's range: carries and borrows between the limbs,
// zeros, differences that would be negative, and sums that would pass the
// range (refused, never wrapped or rounded).
func TestLuaArithmetic(t *testing.T) {
	p := startRedis(t)
	c := p.client(t)
	script := redis.NewScript(prelude + `
local ah, al, bh, bl = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local dh, dl = sub(ah, al, bh, bl)
local diff = 'neg'
if dh then diff = string.format('%d %d', dh, dl) end
local ok, sh, sl = pcall(add, ah, al, bh, bl)
local sum = 'range'
if ok then sum = string.format('%d %d', sh, sl) end
return {sum, diff, tostring(le(ah, al, bh, bl))}
`)
	const hmax = 4503599627370496 // 2^52: the scripts' bound on hi
	rng := rand.New(rand.NewPCG(1, 2))
	limb := func(bound int64) int64 {
		switch rng.IntN(4) {
		case 0:
			return 0
		case 1:
			return bound - 1 - rng.Int64N(3)
		}
		return rng.Int64N(bound)
	}
	base := int64(1_000_000_000_000_000)
	cases := [][4]int64{{0, 0, 0, 0}, {0, base - 1, 0, 1}, {1, 0, 0, 1}, {0, 1, 1, 0}, {5, 5, 5, 5},
		{hmax - 1, base - 1, 0, 1}, {hmax - 1, base - 2, 0, 1}, {hmax / 2, 0, hmax / 2, 0}, {hmax/2 - 1, 0, hmax / 2, base - 1}}
	for range 400 {
		cases = append(cases, [4]int64{limb(hmax), limb(base), limb(hmax), limb(base)})
	}
	value := func(h, l int64) *big.Int {
		v := new(big.Int).Mul(big.NewInt(h), big.NewInt(base))
		return v.Add(v, big.NewInt(l))
	}
	limbs := func(v *big.Int) string {
		h, l := new(big.Int).QuoRem(v, big.NewInt(base), new(big.Int))
		return h.String() + " " + l.String()
	}
	for _, tc := range cases {
		v, err := script.Run(context.Background(), c, []string{"a{x}", "b{x}", "c{x}"}, "", "0", "x",
			fmt.Sprint(tc[0]), fmt.Sprint(tc[1]), fmt.Sprint(tc[2]), fmt.Sprint(tc[3])).StringSlice()
		if err != nil {
			t.Fatal(err)
		}
		x, y := value(tc[0], tc[1]), value(tc[2], tc[3])
		sum := new(big.Int).Add(x, y)
		wantSum := "range"
		if sum.Cmp(value(hmax, 0)) < 0 {
			wantSum = limbs(sum)
		}
		wantDiff := "neg"
		if d := new(big.Int).Sub(x, y); d.Sign() >= 0 {
			wantDiff = limbs(d)
		}
		wantLe := fmt.Sprint(x.Cmp(y) <= 0)
		if v[0] != wantSum || v[1] != wantDiff || v[2] != wantLe {
			t.Errorf("%v: add %s sub %s le %s; want %s, %s, %s", tc, v[0], v[1], v[2], wantSum, wantDiff, wantLe)
		}
	}
}
