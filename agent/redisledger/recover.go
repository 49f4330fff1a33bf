package redisledger

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// Recover clears the mark of a scope found lost (agent.ErrStoreStateLost),
// after an operator has reconciled its money, so that it can be spent
// from again. spentUSD is what the operator established the scope has
// spent (from the providers' records, say): the scope's spending is set
// to it, every hold and lease is dropped (a call still running when its
// worker was stopped must be counted in spentUSD); the call count, the
// history and the ended ids that survived are kept (none, when the
// scope's hash vanished: the scope restarts from spentUSD).
//
// Stop every worker of the scope first. The scope gets a new epoch: a
// worker that had used it before Recover fails closed on every call from
// then on (it must be restarted with a new Store), without marking the
// scope lost again; this Store and those opened after Recover use the
// recovered scope. Recover fails on a scope that is not marked lost.
func (s *Store) Recover(ctx context.Context, spentUSD json.Number) error {
	spent, err := exactAtto(spentUSD)
	if err != nil {
		return fmt.Errorf("redisledger: recover: %w", err)
	}
	s1, s0, err := toLimbs(spent)
	if err != nil {
		return fmt.Errorf("redisledger: recover: %w", err)
	}
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	var raw [8]byte
	_, _ = rand.Read(raw[:])
	epoch := strconv.FormatInt(time.Now().UnixMilli(), 36) + "-" + hex.EncodeToString(raw[:])
	v, err := recoverScript.Run(ctx, s.c, s.keys, epoch, s1, s0, ms(s.idle)).Slice()
	if err != nil {
		return fmt.Errorf("redisledger: recover: %w", err)
	}
	if len(v) != 2 {
		return fmt.Errorf("redisledger: recover: %d values from the script", len(v))
	}
	ver, err := strconv.ParseInt(fmt.Sprint(v[1]), 10, 64)
	if err != nil {
		return fmt.Errorf("redisledger: recover: version %v", v[1])
	}
	s.mu.Lock()
	s.epoch, s.seen = epoch, ver
	s.mu.Unlock()
	return nil
}
