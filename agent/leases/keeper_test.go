package leases

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// renewal is one call of a RenewFunc.
type renewal struct {
	Lease time.Duration
	IDs   []string
}

// recorder returns a RenewFunc that sends every call on a channel and
// returns the error fail gives for it.
func recorder(fail func(n int) error) (RenewFunc, <-chan renewal) {
	ch := make(chan renewal, 1000)
	n := 0
	return func(ctx context.Context, lease time.Duration, ids []string) error {
		n++
		ids = slices.Clone(ids)
		slices.Sort(ids)
		ch <- renewal{lease, ids}
		if fail != nil {
			return fail(n)
		}
		return nil
	}, ch
}

func next(t *testing.T, ch <-chan renewal) renewal {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no renewal in 10 s")
		return renewal{}
	}
}

func TestKeeperRenewsWhatIsHeld(t *testing.T) {
	renew, ch := recorder(nil)
	k := New(renew, Options{Lease: 60 * time.Millisecond})
	defer k.Close()
	k.Hold("a", 60*time.Millisecond)
	k.Hold("b", 60*time.Millisecond)
	k.Hold("c", 90*time.Millisecond)
	// Renewals group ids by lease; within a few rounds both groups show.
	want := map[time.Duration][]string{60 * time.Millisecond: {"a", "b"}, 90 * time.Millisecond: {"c"}}
	got := map[time.Duration][]string{}
	for range 20 {
		r := next(t, ch)
		got[r.Lease] = r.IDs
		if len(got) == 2 && cmp.Equal(got, want) {
			break
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("renewals (-want +got):\n%s", diff)
	}
	if !k.Holds("a") || k.Holds("z") {
		t.Errorf("Holds(a) = %v, Holds(z) = %v", k.Holds("a"), k.Holds("z"))
	}
	k.Drop("a")
	k.Drop("c")
	if k.Holds("a") {
		t.Error("Holds(a) after Drop")
	}
	// The round under way at Drop (two calls at most) may still name a
	// and c; the rounds after it may not.
	for len(ch) > 0 {
		<-ch
	}
	for range 2 {
		next(t, ch)
	}
	if r := next(t, ch); !cmp.Equal(r, renewal{60 * time.Millisecond, []string{"b"}}) {
		t.Errorf("renewal after Drop = %v, want only b", r)
	}
}

// TestKeeperRetriesSoon: after a failed renewal the next comes after
// Retry, not after a third of the lease.
func TestKeeperRetriesSoon(t *testing.T) {
	renew, ch := recorder(func(n int) error {
		if n == 1 {
			return errors.New("store unreachable")
		}
		return nil
	})
	k := New(renew, Options{Lease: time.Hour, Retry: 10 * time.Millisecond})
	defer k.Close()
	k.Hold("a", time.Hour)
	next(t, ch)
	start := time.Now()
	next(t, ch) // a third of the lease would be 20 minutes
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("retry after %v", took)
	}
}

// TestKeeperMaxInterval: MaxInterval renews more often than a third of
// the lease.
func TestKeeperMaxInterval(t *testing.T) {
	renew, ch := recorder(nil)
	k := New(renew, Options{Lease: time.Hour, MaxInterval: 10 * time.Millisecond})
	defer k.Close()
	k.Hold("a", time.Hour)
	for range 3 {
		next(t, ch)
	}
}

// TestKeeperGivesEachTryAThirdOfTheLease: the context of a renewal ends
// a third of the shortest lease after it began, whatever MaxInterval.
func TestKeeperGivesEachTryAThirdOfTheLease(t *testing.T) {
	left := make(chan time.Duration, 10)
	k := New(func(ctx context.Context, lease time.Duration, ids []string) error {
		d, _ := ctx.Deadline()
		left <- time.Until(d)
		return nil
	}, Options{Lease: 3 * time.Hour, MaxInterval: time.Millisecond})
	defer k.Close()
	k.Hold("a", 3*time.Hour)
	if d := <-left; d < 59*time.Minute || d > time.Hour {
		t.Errorf("a renewal may take %v, want 1 h", d)
	}
}

func TestKeeperClose(t *testing.T) {
	renew, ch := recorder(nil)
	k := New(renew, Options{Lease: 3 * time.Millisecond})
	k.Hold("a", 3*time.Millisecond)
	next(t, ch)
	k.Close()
	k.Close()
	// At most the round under way when Close came finishes.
	time.Sleep(50 * time.Millisecond)
	for len(ch) > 0 {
		<-ch
	}
	time.Sleep(50 * time.Millisecond)
	if n := len(ch); n != 0 {
		t.Errorf("%d renewals after Close", n)
	}
}
