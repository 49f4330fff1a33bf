package agent

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMemoryLedgerStoreMoney(t *testing.T) {
	ctx := context.Background()
	s := NewMemoryLedgerStore(nil)
	reserve := func(id, amount string, want bool) {
		t.Helper()
		ok, _, err := s.Reserve(ctx, Reservation{ID: id, AmountUSD: jsonNumber(amount), LimitUSD: "1", MaxCalls: 4})
		if err != nil || ok != want {
			t.Fatalf("Reserve(%s, %s) = %v, %v; want %v", id, amount, ok, err, want)
		}
	}
	reserve("a", "0.6", true)
	reserve("b", "0.5", false) // 0.6 + 0.5 > 1
	reserve("b", "0.4", true)
	if _, _, err := s.Reserve(ctx, Reservation{ID: "a", AmountUSD: "0"}); err == nil {
		t.Error("a second reservation under one id was accepted")
	}
	set, err := s.Settle(ctx, "a", "0.25", nil)
	if err != nil || set.Late || set.Duplicate {
		t.Fatalf("Settle(a) = %+v, %v", set, err)
	}
	if set, _ := s.Settle(ctx, "a", "0.25", nil); !set.Duplicate {
		t.Errorf("second Settle(a) = %+v, want Duplicate", set)
	}
	if err := s.Release(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	// A settlement of a reservation the store no longer holds still counts.
	if set, _ := s.Settle(ctx, "lost", "0.125", nil); !set.Late {
		t.Errorf("Settle(lost) = %+v, want Late", set)
	}
	reserve("c", "0", true) // a free call fits whatever was spent
	reserve("d", "0.01", true)
	reserve("e", "0", false) // the fifth call exceeds MaxCalls 4
	st, err := s.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := Balance{SpentUSD: "0.375", ReservedUSD: "0.01", Calls: 4}
	if diff := cmp.Diff(want, st.Balance); diff != "" {
		t.Errorf("balance (-want +got):\n%s", diff)
	}
}

func jsonNumber(s string) json.Number { return json.Number(s) }
