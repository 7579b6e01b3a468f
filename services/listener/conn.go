package listener

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/relay"
	"github.com/syndicate-go/syndicate/preserves"
)

// spawnConn starts the unlinked connection actor for c.
func (s *spec) spawnConn(t *dataspace.Turn, c net.Conn) {
	name := s.connName(c)
	log := s.log.With().Str("conn", name).Logger()
	gk := s.gk
	sniff := s.network == "tcp"
	t.Spawn(name, func(t *dataspace.Turn) error {
		fr := t.FacetRef()
		opts := relay.Options{InitialRef: gk, Logger: log}
		if !sniff {
			// Unix sockets carry only the Syndicate protocol (no sniffing;
			// syntax detected per packet by the relay).
			startRelay(t, c, opts, log)
			return nil
		}
		t.LinkedTask("sniff", func(ctx context.Context) error {
			stop := context.AfterFunc(ctx, func() { c.Close() })
			var b [1]byte
			_, err := io.ReadFull(c, b[:])
			if !stop() {
				return ctx.Err()
			}
			if err != nil {
				c.Close()
				return ErrClosedEarly
			}
			if b[0] == '[' || b[0] == '<' || b[0] >= 0x80 {
				fr.Activate(func(t *dataspace.Turn) error {
					startRelay(t, &prefixed{Conn: c, first: b[:]}, opts, log)
					return nil
				})
				return dataspace.ErrKeepFacet
			}
			serve503(c, b[0])
			return nil
		})
		return nil
	})
}

func startRelay(t *dataspace.Turn, c net.Conn, opts relay.Options, log zerolog.Logger) {
	conn, _ := relay.Run(t, c, opts)
	t.OnStop(func(*dataspace.Turn) error {
		ev := log.Info()
		if err := conn.Err(); err != nil {
			ev = ev.Err(err)
		}
		ev.Msg("disconnect")
		return nil
	})
}

// connName is `<tcp "IP:PORT">` or `<unix PID UID>` (PID -1 if unknown).
func (s *spec) connName(c net.Conn) string {
	if s.network == "tcp" {
		return preserves.FormatText(preserves.NewRecord(symTCP, preserves.String(c.RemoteAddr().String())))
	}
	pid, uid := int64(-1), int64(-1)
	if uc, ok := c.(*net.UnixConn); ok {
		if raw, err := uc.SyscallConn(); err == nil {
			_ = raw.Control(func(fd uintptr) {
				if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
					pid, uid = int64(cred.Pid), int64(cred.Uid)
				}
			})
		}
	}
	return preserves.FormatText(preserves.NewRecord(symUnix, preserves.Int(pid), preserves.Int(uid)))
}

// prefixed replays the sniffed byte before the rest of the stream.
type prefixed struct {
	net.Conn
	first []byte
}

func (p *prefixed) Read(b []byte) (int, error) {
	if len(p.first) > 0 {
		n := copy(b, p.first)
		p.first = p.first[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}

const reply503 = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"

// serve503 answers a plain HTTP request: this server has no httpd, so the
// reply is 503 with an empty body (services spec §7.2). The request head
// is read first (bounded in size and time) so that closing does not reset
// the connection under the client's feet.
func serve503(c net.Conn, first byte) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReaderSize(io.LimitReader(c, 16<<10), 4096)
	head := []byte{first}
	for !bytes.HasSuffix(head, []byte("\r\n\r\n")) && !bytes.HasSuffix(head, []byte("\n\n")) {
		line, err := br.ReadSlice('\n')
		head = append(head, line...)
		if err != nil {
			break
		}
	}
	_, _ = io.WriteString(c, reply503)
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(c, 64<<10))
}
