package preflight

import (
	"encoding/json"

	"github.com/agentpreflight/preflight/internal/decimal"
)

// Defaults of the optional money inputs.
var (
	defaultPrior       = decimal.Parse("0.25")  // economics.priorInvalidProbability
	defaultCheckPrice  = decimal.Parse("0.001") // economics.preflightPriceUsd
	defaultDecidePrice = decimal.Parse("0.002") // preflightPriceUsd of a tool call
)

func number(d decimal.Dec) json.Number { return json.Number(d.String()) }

// numbers sets *out[i] to the text of ds[i], all carved from one string.
func numbers(out []*json.Number, ds ...decimal.Dec) {
	var buf [256]byte
	b := buf[:0]
	var endsBuf [8]int
	ends := endsBuf[:0]
	for _, d := range ds {
		b = d.AppendText(b)
		ends = append(ends, len(b))
	}
	all, start := string(b), 0
	for i, o := range out {
		*o = json.Number(all[start:ends[i]])
		start = ends[i]
	}
}

// checkEconomics writes the proceed/abort advice of a check into res. With
// D = downstream cost, R = retry cost, B = billsOnInvalidRequest,
// p = prior invalid probability, P = preflight price and
// loss = (B ? D : 0) + R:
//
//	wasteIfSent          = valid ? 0 : loss
//	realizedNet          = wasteIfSent − P
//	aPrioriExpectedWaste = p × loss
//	aPrioriExpectedNet   = p × loss − P
//	worthCheckingAPriori = aPrioriExpectedNet > 0
//
// All arithmetic is exact decimal. When the remaining budget is known and
// D exceeds it, it returns a budget_insufficient warning.
func checkEconomics(f *checkFacts, valid bool, res *EconomicsResult) *Issue {
	loss := f.retry
	if f.bills {
		loss = decimal.Add(loss, f.down)
	}
	var waste decimal.Dec
	*res = EconomicsResult{Advice: AdviceProceed, Reason: AdviceReasonValid}
	if !valid {
		waste = loss
		res.Advice, res.Reason = AdviceAbort, AdviceReasonInvalidDoomedRequest
	}
	expected := decimal.Mul(f.prior, loss)
	expectedNet := decimal.Sub(expected, f.price)
	numbers([]*json.Number{&res.PreflightPriceUSD, &res.WasteIfSentUSD, &res.RealizedNetUSD,
		&res.APrioriExpectedWasteUSD, &res.APrioriExpectedNetUSD},
		f.price, waste, decimal.Sub(waste, f.price), expected, expectedNet)
	res.WorthCheckingAPriori = expectedNet.Sign() > 0

	if f.hasBudget && decimal.Cmp(f.down, f.budget) > 0 {
		return &Issue{Path: "/economics/budgetRemainingUsd", Code: IssueBudgetInsufficient,
			Message: "the downstream cost " + f.down.String() + " exceeds the remaining budget " + f.budget.String()}
	}
	return nil
}
