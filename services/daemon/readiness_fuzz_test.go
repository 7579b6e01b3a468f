package daemon

import (
	"context"
	"testing"
	"unicode/utf8"
)

// A daemon controls what it sends to its notify socket: no datagram may
// crash the server, and what reaches the status is clean, bounded text.
func FuzzNotifyDatagram(f *testing.F) {
	for _, seed := range []string{
		"READY=1", "STATUS=ok\nREADY=1", "RELOADING=1\nSTATUS=x", "STOPPING=1", "MAINPID=1",
		"MAINPID=-5", "MAINPID=99999999999999999999", "WATCHDOG=1", "WATCHDOG_USEC=0",
		"WATCHDOG_USEC=9223372036854775807", "EXTEND_TIMEOUT_USEC=abc", "STATUS=\xff\x00\x1b[2J",
		"=\n=\n==", "",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		var got []Notification
		m := &monitor{r: Readiness{Kind: ReadySDNotify}, ready: func() {}, notify: func(Notification) {},
			warn: func(string, ...any) {}, fail: func(error) {}}
		m.ctx, m.cancel = context.WithCancel(context.Background())
		defer m.stop()
		if n, _ := m.handle(msg, 1<<30); n != nil {
			got = append(got, *n)
		}
		for _, n := range got {
			if !utf8.ValidString(n.Status) || len(n.Status) > statusMax+len("…") {
				t.Fatalf("status %q not clean or too long", n.Status)
			}
			for _, r := range n.Status {
				if r < 0x20 || r == 0x7f {
					t.Fatalf("control character in status %q", n.Status)
				}
			}
			if n.MainPID != 0 {
				t.Fatalf("MAINPID %d accepted outside the group", n.MainPID)
			}
		}
	})
}
