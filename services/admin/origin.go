package admin

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/schemas/service"
	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// Who asked (operator issue: "restart requested, and by whom"). A message
// names no sender, so a daemon cannot tell `syndicate restart web` from a
// script's `! <restart-service <daemon web>>`. The admin endpoint knows
// its peer (SO_PEERCRED: uid and pid, and so the command line), so each
// connection gets the config dataspace through an origin proxy: it passes
// everything on unchanged, and sends `<request-origin REQUEST BY>` just
// before each operator request (restart, stop, start, signal) it passes,
// from the same turn, so the daemon sees the origin first.

// originProxy is one admin connection's view of the config dataspace. It
// lives in the connection's actor; its fields belong to that actor.
type originProxy struct {
	services.Proxy // to cfg
	by             string
}

// operatorRequests are the labels of the messages whose origin is told.
var operatorRequests = map[preserves.Value]bool{
	service.LabelRestartService:    true,
	syndicatego.LabelStopService:   true,
	syndicatego.LabelStartService:  true,
	syndicatego.LabelSignalService: true,
}

func newOriginProxy(cfg *dataspace.Ref, cred *unix.Ucred) *originProxy {
	return &originProxy{Proxy: services.Proxy{Target: cfg}, by: describePeer(cred)}
}

// describePeer is who is at the other end: "uid 0, pid 4242 (syndicate
// restart web), over the admin socket".
func describePeer(cred *unix.Ucred) string {
	if cred == nil {
		return "a client of the admin socket"
	}
	who := fmt.Sprintf("uid %d, pid %d", cred.Uid, cred.Pid)
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", cred.Pid)); err == nil && len(b) > 0 {
		args := strings.Fields(strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " "))
		if len(args) > 0 {
			args[0] = args[0][strings.LastIndexByte(args[0], '/')+1:]
		}
		cmd := strings.Join(args, " ")
		if r := []rune(cmd); len(r) > 200 {
			cmd = string(r[:199]) + "…"
		}
		who += " (" + preserves.TerminalText(cmd) + ")"
	}
	return who + ", over the admin socket"
}

func (p *originProxy) Message(t *dataspace.Turn, v preserves.Value) error {
	if r, ok := v.(*preserves.Record); ok && len(r.Fields) > 0 && operatorRequests[r.Label] {
		t.Message(p.Target, syndicatego.RequestOrigin{Request: v, By: p.by}.ToValue())
	}
	return p.Proxy.Message(t, v)
}
