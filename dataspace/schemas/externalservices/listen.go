package externalservices

import (
	sg "github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/dataspace/transport"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/schema"
)

// MaxListen bounds the sockets of one daemon.
const MaxListen = 64

// listen elaborates the listen and start keys (socket activation,
// docs/services.md "Sockets").
func (e *elaboration) listen(v preserves.Value) {
	f, ok := field[sg.ListenFieldPresent](e, v, "listen", sg.ParseListenField, mustBe("listen must be a sequence of <tcp HOST PORT> or <unix PATH>"))
	st, hasStart := field[sg.StartFieldPresent](e, v, "start", sg.ParseStartField, enum("start", sg.ParseStartMode))
	x, _ := e.get("listen")
	if ok && !schema.IsWildcard(x) {
		at := e.keyPos("listen")
		if len(f.Listen) == 0 || len(f.Listen) > MaxListen {
			e.invalid(at, "listen needs from 1 to %d addresses", MaxListen)
		}
		seq, _ := preserves.Unwrap(x).(preserves.Sequence)
		for i, a := range f.Listen {
			addr, err := transport.ParseValue(a)
			if err != nil {
				e.invalid(in(seq, i, at), "listen: %v", err)
				continue
			}
			e.s.Listen = append(e.s.Listen, addr)
		}
	}
	if hasStart && st.Start == sg.StartModeOnDemand {
		if !ok {
			e.invalid(e.keyPos("start"), "start: on-demand needs listen (the sockets whose first connection starts it)")
		}
		e.s.OnDemand = true
	}
	if ok {
		if e.s.Readiness.Kind == ReadyFD {
			e.invalid(e.keyPos("readiness"), "readiness <notification-fd N> cannot be combined with listen (fds 3… are the sockets); use sd-notify")
		}
		if _, given := e.get("schedule"); given {
			e.invalid(e.keyPos("schedule"), "schedule cannot be combined with listen")
		}
	}
}
