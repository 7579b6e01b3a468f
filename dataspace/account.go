package dataspace

import (
	"context"
	"sync"
	"sync/atomic"
)

// Account is a debt counter for internal flow control (runtime spec §9).
// A turn runs on behalf of an account: when it commits, every outbound
// batch borrows its number of events against the turn's account, and the
// debt is repaid once the receiving actor has handled (or dropped) the
// batch. A turn handling a batch runs on that batch's account, so fan-out
// is charged to the original cause. A producer ingesting external input
// (a relay's reader loop) calls Wait before each read, so it cannot run
// ahead of the actors its input keeps busy.
//
// Turns started by FacetRef.Activate run on no account (nothing is
// counted) unless started with ActivateAccount.
type Account struct {
	debt    atomic.Int64
	waiting atomic.Int32

	mu     sync.Mutex
	waitCh chan struct{} // closed to wake waiters; nil when nobody waits
}

// NewAccount returns an account with no debt.
func NewAccount() *Account { return &Account{} }

// Debt returns the number of events charged to the account and not yet
// handled.
func (a *Account) Debt() int64 { return a.debt.Load() }

// Borrow charges n units of debt for work held on the account's behalf
// outside actor mailboxes (a relay charges the bytes it has queued for a
// peer until they are written). Every Borrow must be matched by a Repay.
func (a *Account) Borrow(n int64) { a.debt.Add(n) }

// Repay settles n units of debt and wakes producers waiting in Wait.
func (a *Account) Repay(n int64) {
	a.debt.Add(-n)
	// A waiter increments waiting before it reads debt, and we read waiting
	// after updating debt, so one of us sees the other.
	if a.waiting.Load() > 0 {
		a.mu.Lock()
		if a.waitCh != nil {
			close(a.waitCh)
			a.waitCh = nil
		}
		a.mu.Unlock()
	}
}

// Wait blocks until the account's debt is at most limit, or ctx ends.
func (a *Account) Wait(ctx context.Context, limit int64) error {
	if a.debt.Load() <= limit {
		return nil // the common case: no lock, no allocation
	}
	for {
		a.mu.Lock()
		a.waiting.Add(1)
		if a.debt.Load() <= limit {
			a.waiting.Add(-1)
			a.mu.Unlock()
			return nil
		}
		if a.waitCh == nil {
			a.waitCh = make(chan struct{})
		}
		ch := a.waitCh
		a.mu.Unlock()
		select {
		case <-ch:
			a.waiting.Add(-1)
		case <-ctx.Done():
			a.waiting.Add(-1)
			return ctx.Err()
		}
	}
}

// ActivatePaced is how a goroutine feeding external input into the actor
// world keeps pace with it: it waits until acct's debt is at most limit,
// then runs fn as [FacetRef.ActivateAccount] does, charging everything the
// turn causes (the batches it sends, their fan-out, the bytes relays queue
// for their peers) to acct. A producer that calls it in a loop is slowed to
// the pace of the slowest consumer it feeds. It returns whether the actor
// is alive, and ctx's error if ctx ended while waiting (fn then did not
// run).
func (r FacetRef) ActivatePaced(ctx context.Context, acct *Account, limit int64, fn func(t *Turn) error) (bool, error) {
	if err := acct.Wait(ctx, limit); err != nil {
		return r.a != nil && !r.a.dead.Load(), err
	}
	return r.ActivateAccount(acct, fn), nil
}
