package dataspace

import (
	"bytes"
	"fmt"
	"runtime"
	"strconv"
	"sync"
)

// The guard against Activate from inside a turn. A turn that calls
// Activate on its own actor deadlocks on the turn lock, and one that calls
// the paced Activate on any actor may wait for debt that only its own
// progress would repay; the package doc says not to, and race builds (the
// test suite: go test -race) check it. Go has no goroutine-local state,
// so the check reads the goroutine's id from its stack header, which is
// too slow for normal builds: there checkTurns is false and the compiler
// drops every call.

// turnsByGoroutine maps the id of a goroutine running a turn to its actor.
var turnsByGoroutine sync.Map

// goroutineID parses "goroutine N [" from the calling goroutine's stack.
func goroutineID() uint64 {
	var buf [64]byte
	s := buf[:runtime.Stack(buf[:], false)]
	s = bytes.TrimPrefix(s, []byte("goroutine "))
	if i := bytes.IndexByte(s, ' '); i > 0 {
		s = s[:i]
	}
	id, _ := strconv.ParseUint(string(s), 10, 64)
	return id
}

// enterTurn notes that the calling goroutine runs a turn of a; the
// returned function undoes it (turns nest when a turn uses ActivateNow on
// another actor).
func enterTurn(a *Actor) func() {
	g := goroutineID()
	prev, had := turnsByGoroutine.Swap(g, a)
	return func() {
		if had {
			turnsByGoroutine.Store(g, prev)
		} else {
			turnsByGoroutine.Delete(g)
		}
	}
}

// ActivateInTurnError is the panic value when Activate is called
// from inside a turn (race builds only).
type ActivateInTurnError struct {
	Call   string // "Activate" or "ActivateNow"
	Caller string // the actor whose turn made the call
	Target string // the actor activated
}

func (e *ActivateInTurnError) Error() string {
	if e.Caller == e.Target {
		return fmt.Sprintf("dataspace: %s on actor %s from inside its own turn would deadlock; use Turn.Later", e.Call, e.Target)
	}
	return fmt.Sprintf("dataspace: %s on actor %s from inside a turn of actor %s may wait for debt only that turn would repay; use Turn.Message, or ActivateNow", e.Call, e.Target, e.Caller)
}

// checkNotInTurn panics when the calling goroutine runs a turn: of any
// actor for the paced Activate (paced), of target itself otherwise.
func checkNotInTurn(call string, target *Actor, paced bool) {
	v, ok := turnsByGoroutine.Load(goroutineID())
	if !ok {
		return
	}
	caller := v.(*Actor)
	if paced || caller == target {
		panic(&ActivateInTurnError{Call: call, Caller: caller.Name(), Target: target.Name()})
	}
}
