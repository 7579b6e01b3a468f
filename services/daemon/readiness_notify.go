package daemon

// The sd_notify side of readiness (readiness.go): one datagram socket per
// process instance, named by $NOTIFY_SOCKET in the child's environment, as
// systemd does for Type=notify services.
//
// The socket lives in a fresh directory of mode 0700 (in
// services.RuntimeBase: $XDG_RUNTIME_DIR, /run as root, or the temporary
// directory), so only
// the server's user (and root) can reach it. Every datagram carries the
// sender's credentials (SO_PASSCRED); one from outside the daemon's
// process group is ignored, like systemd's NotifyAccess=all within the
// service's cgroup. A sender that has already exited when its datagram is
// read cannot be checked and is accepted: `systemd-notify` exits right
// after sending.
//
// Understood assignments (systemd's sd_notify(3)); others are ignored:
//
//	READY=1           ready (first time), or the end of a reload
//	RELOADING=1       reloading until the next READY=1
//	STOPPING=1        the daemon is shutting down
//	STATUS=TEXT       free text, shown by `syndicate status`
//	MAINPID=N         the daemon's main process (must be in its group)
//	WATCHDOG=1        keep-alive; WATCHDOG=trigger fails at once
//	WATCHDOG_USEC=N   change the watchdog interval
//	EXTEND_TIMEOUT_USEC=N  before ready: readyTimeout ends N µs from now

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/syndicate-go/syndicate/services"
)

// notifyMax is the largest datagram read (systemd's NOTIFY_BUFFER_MAX);
// longer ones are truncated and ignored.
const notifyMax = 4096

// statusMax bounds STATUS= text kept for display.
const statusMax = 512

type notifySocket struct {
	dir  string
	path string
	conn *net.UnixConn
}

func listenNotify() (*notifySocket, error) {
	dir, err := os.MkdirTemp(services.RuntimeBase(), "syndicate-notify-")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	raw, err := conn.SyscallConn()
	if err == nil {
		cerr := raw.Control(func(fd uintptr) {
			err = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PASSCRED, 1)
		})
		if cerr != nil {
			err = cerr
		}
	}
	if err != nil {
		conn.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("SO_PASSCRED: %w", err)
	}
	return &notifySocket{dir: dir, path: path, conn: conn}, nil
}

func (s *notifySocket) close() {
	s.conn.Close()
	os.RemoveAll(s.dir)
}

// serve reads datagrams until the socket is closed.
func (s *notifySocket) serve(pid int, m *monitor) {
	buf := make([]byte, notifyMax)
	oob := make([]byte, unix.CmsgSpace(unix.SizeofUcred))
	mainPID := pid
	for {
		n, oobn, flags, _, err := s.conn.ReadMsgUnix(buf, oob)
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				m.warnf("notify socket: %v", err)
			}
			return
		}
		if flags&unix.MSG_TRUNC != 0 {
			m.warnf("notify socket: datagram longer than %d bytes ignored", notifyMax)
			continue
		}
		sender, ok := senderPID(oob[:oobn])
		if !ok || !fromDaemon(sender, pid, mainPID) {
			m.warnf("notify socket: datagram from pid %d outside the daemon's process group ignored", sender)
			continue
		}
		n2, mp := m.handle(buf[:n], pid)
		if mp != 0 {
			mainPID = mp
		}
		if n2 != nil {
			m.notify(*n2)
		}
	}
}

func senderPID(oob []byte) (int, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, false
	}
	for _, msg := range msgs {
		if cred, err := unix.ParseUnixCredentials(&msg); err == nil {
			return int(cred.Pid), true
		}
	}
	return 0, false
}

// fromDaemon reports whether sender belongs to the daemon whose group
// leader is pgid.
func fromDaemon(sender, pgid, mainPID int) bool {
	if sender == pgid || sender == mainPID {
		return true
	}
	g, err := unix.Getpgid(sender)
	if errors.Is(err, unix.ESRCH) {
		return true // gone already: cannot be checked (systemd-notify)
	}
	return err == nil && g == pgid
}

// usec parses the value v of the microsecond count k (positive, at most a
// day), warning when it is malformed.
func (m *monitor) usec(k, v []byte) (time.Duration, bool) {
	us, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || us <= 0 || us > int64(24*time.Hour/time.Microsecond) {
		m.warnf("notify socket: bad %s=%q", k, v)
		return 0, false
	}
	return time.Duration(us) * time.Microsecond, true
}

// handle applies one datagram; it returns what the worker should hear of
// (nil when nothing) and an accepted MAINPID.
func (m *monitor) handle(msg []byte, pgid int) (*Notification, int) {
	var n Notification
	tell := false
	for _, line := range bytes.Split(msg, []byte{'\n'}) {
		k, v, ok := bytes.Cut(line, []byte{'='})
		if !ok {
			continue
		}
		switch string(k) {
		case "READY":
			if string(v) == "1" {
				m.becomeReady()
				n.Ready, tell = true, true
			}
		case "RELOADING":
			if string(v) == "1" {
				n.Reloading, tell = true, true
			}
		case "STOPPING":
			if string(v) == "1" {
				n.Stopping, tell = true, true
			}
		case "STATUS":
			n.Status, n.HasStatus, tell = cleanStatus(v), true, true
		case "MAINPID":
			p, err := strconv.Atoi(string(v))
			if err != nil || p <= 0 {
				m.warnf("notify socket: bad MAINPID=%q", v)
				continue
			}
			if g, err := unix.Getpgid(p); err != nil || g != pgid {
				m.warnf("notify socket: MAINPID=%d is not in the daemon's process group; ignored", p)
				continue
			}
			n.MainPID, tell = p, true
		case "WATCHDOG":
			switch string(v) {
			case "1":
				m.mu.Lock()
				m.armWatchdogLocked()
				m.mu.Unlock()
			case "trigger":
				m.fail(fmt.Errorf("%w: the daemon sent WATCHDOG=trigger", ErrWatchdog))
			}
		case "EXTEND_TIMEOUT_USEC":
			d, ok := m.usec(k, v)
			if !ok {
				continue
			}
			m.mu.Lock()
			if !m.isReady && !m.done && m.readyT != nil {
				m.armReadyLocked(d)
				m.extended = true
			}
			m.mu.Unlock()
		case "WATCHDOG_USEC":
			d, ok := m.usec(k, v)
			if !ok {
				continue
			}
			m.mu.Lock()
			m.watchdog = d
			m.armWatchdogLocked()
			m.mu.Unlock()
		}
	}
	if !tell {
		return nil, 0
	}
	return &n, n.MainPID
}

// cleanStatus makes STATUS= text safe to show: valid UTF-8, no control
// characters, bounded.
func cleanStatus(v []byte) string {
	s := strings.ToValidUTF8(string(v), "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > statusMax {
		cut := statusMax
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
