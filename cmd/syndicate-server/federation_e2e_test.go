//go:build e2e

package main

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/dataspace/caveat"
	"github.com/syndicate-go/syndicate/preserves"
)

// docFiles returns the ```pr blocks of a docs page that start with
// `# file: NAME`, by NAME, with the example's port replaced.
func docFiles(t *testing.T, page string, port int) map[string]string {
	t.Helper()
	src, err := os.ReadFile(page)
	require.NoError(t, err)
	files := map[string]string{}
	block := regexp.MustCompile("(?ms)^```pr\\n# file: (\\S+)\\n(.*?)^```")
	for _, m := range block.FindAllStringSubmatch(string(src), -1) {
		files[m[1]] = strings.ReplaceAll(m[2], "9001", strconv.Itoa(port))
	}
	return files
}

// timedLines records each line a process prints with the time it came.
type timedLines struct {
	mu    sync.Mutex
	lines []string
	at    []time.Time
}

func (l *timedLines) follow(r *bufio.Scanner) {
	for r.Scan() {
		l.mu.Lock()
		l.lines = append(l.lines, r.Text())
		l.at = append(l.at, time.Now())
		l.mu.Unlock()
	}
}

// count is the number of lines with prefix, and when the last came.
func (l *timedLines) count(prefix string) (int, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, last := 0, time.Time{}
	for i, s := range l.lines {
		if strings.HasPrefix(s, prefix) {
			n, last = n+1, l.at[i]
		}
	}
	return n, last
}

// TestE2EFederationDocsExample (federation issue): the two servers of
// docs/services.md "Federation", from the page's own text. A mirrors B's
// greeting over a sturdy route and a noise route and says hello; then B is
// restarted ten times, down 1–3 s each time, and A must be whole again
// after each (reconnect p50 and p90 are logged); meanwhile `syndicate
// status` on A shows the transport and the routes going through their
// states.
func TestE2EFederationDocsExample(t *testing.T) {
	cli := buildClient(t)
	port := freePort(t)
	files := docFiles(t, "../../docs/services.md", port)
	require.Contains(t, files, "b/offer.pr")
	require.Contains(t, files, "a/mirror.pr")
	// The docs' sturdy route carries the signature `mint` prints.
	sig := caveat.Mint(preserves.String("shared"), []byte("demo key"))
	require.Contains(t, files["a/mirror.pr"], strings.TrimPrefix(preserves.FormatText(sig.ToValue()), "<ref {oid: \"shared\", "))

	dir := t.TempDir()
	for name, body := range files {
		writeFile(t, filepath.Join(dir, name), body)
	}
	startB := func() *running {
		r := start(t, "-c", filepath.Join(dir, "b"))
		eventually(t, 20*time.Second, "B's listener", func() bool { return strings.Contains(r.stderr.String(), `"message":"listening"`) })
		return r
	}
	b := startB()
	sock := filepath.Join(dir, "a.sock")
	a := start(t, "-c", filepath.Join(dir, "a"), "--admin-socket", sock)

	obs := exec.Command(cli, "--admin-socket", sock, "observe", "<greeting-from-b ?g>")
	out, err := obs.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, obs.Start())
	t.Cleanup(func() { obs.Process.Kill(); obs.Wait() })
	seen := &timedLines{}
	go seen.follow(bufio.NewScanner(out))
	const appeared, vanished = `+ <greeting-from-b "from-b">`, `- <greeting-from-b "from-b">`
	eventually(t, 20*time.Second, "B's greeting on A", func() bool { n, _ := seen.count(appeared); return n == 1 })
	eventually(t, 20*time.Second, "the greeting over noise", func() bool {
		o, _ := exec.Command(cli, "--admin-socket", sock, "dump", "<greeting-over-noise _>").Output()
		return strings.Contains(string(o), `<greeting-over-noise "from-b">`)
	})
	eventually(t, 10*time.Second, "A's hello at B", func() bool { return strings.Contains(b.stderr.String(), "server A") })
	statusA := func() string {
		o, _ := exec.Command(cli, "--admin-socket", sock, "status").Output()
		return string(o)
	}
	row := func(out, subject, state string) bool {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, subject) && strings.Contains(l, " "+state+" ") {
				return true
			}
		}
		return false
	}
	tcp := `<tcp "127.0.0.1" ` + strconv.Itoa(port) + ">"
	eventually(t, 10*time.Second, "status: connected and resolved", func() bool {
		s := statusA()
		return row(s, tcp, "connected") && row(s, `<ref "shared"> via `+tcp, "resolved") && row(s, `<noise "shared-noise"> via `+tcp, "resolved")
	})
	require.NotContains(t, statusA(), "06f2b59a", "status shows no credential")

	var delays []time.Duration
	for i := range 10 {
		require.Equal(t, 0, b.stop(t))
		eventually(t, 10*time.Second, "the greeting to go", func() bool { n, _ := seen.count(vanished); return n == i+1 })
		eventually(t, 10*time.Second, "status: failed and waiting", func() bool {
			s := statusA()
			return row(s, tcp, "failed") && strings.Contains(s, "ConnectionRefused") && strings.Contains(s, "next attempt in") &&
				row(s, `<ref "shared"> via `+tcp, "waiting")
		})
		if i == 0 {
			t.Logf("A's status while B is down:\n%s", statusA())
		}
		// B stays down for 1 to 3 s: an outage to recover from, not a
		// wait for anything.
		time.Sleep(time.Second + time.Duration(i)*200*time.Millisecond)
		b = startB()
		up := time.Now()
		eventually(t, 15*time.Second, "A to be whole again", func() bool { n, _ := seen.count(appeared); return n == i+2 })
		_, at := seen.count(appeared)
		delays = append(delays, at.Sub(up))
		if i == 0 {
			t.Logf("A's status once B is back:\n%s", statusA())
		}
	}
	slices.Sort(delays)
	t.Logf("reconnect after B's listener is back, over %d restarts: p50 %v, p90 %v, max %v",
		len(delays), delays[len(delays)/2], delays[len(delays)*9/10], delays[len(delays)-1])
	if !strings.Contains(a.stderr.String(), `"message":"disconnected"`) || !strings.Contains(a.stderr.String(), `"message":"connect failed"`) {
		t.Errorf("A's log says nothing of the outages:\n%s", a.stderr.String())
	}
	var conns []string
	for _, l := range strings.Split(a.stderr.String(), "\n") {
		if strings.Contains(l, `"transport"`) {
			conns = append(conns, l)
		}
	}
	t.Logf("A's log of its connection (first lines):\n%s", strings.Join(conns[:min(len(conns), 8)], "\n"))
	require.Equal(t, 0, b.stop(t))
	require.Equal(t, 0, a.stop(t))
}

// TestE2EFederationFlood (federation issue, item 4): the flood of
// TestE2EFloodEveryMessageDelivered, produced at server B and consumed at
// server A. A's script observes `<flood _>` messages in B's config
// dataspace over a connect-transport and passes each on in its own; the
// consumer reads A slowly. Flow control must slow the producer through
// both servers: every message arrives, and neither server's memory runs
// away.
func TestE2EFederationFlood(t *testing.T) {
	port := freePort(t)
	b := startFlood(t, `<require-service <relay-listener <tcp "127.0.0.1" `+strconv.Itoa(port)+`> $config>>`)
	eventually(t, 20*time.Second, "B's TCP listener", func() bool {
		return strings.Count(b.stderr.String(), `"message":"listening"`) == 2
	})
	tcp := `<tcp "127.0.0.1" ` + strconv.Itoa(port) + `>`
	a := startFlood(t, `<q <connect-transport `+tcp+`>>
? <a <connect-transport `+tcp+`> <ok <connected-transport _ _ ?b>>> [
  $b ?? <flood ?x> [ $config ! <flood $x> ]
  $b ?? <probe> [ $config ! <probe> ]
]`)
	eventually(t, 20*time.Second, "A linked to B", func() bool {
		return strings.Contains(a.stderr.String(), `"message":"connected"`)
	})
	// A's subscription must have reached B before the flood starts: send
	// <probe> at B until A's consumer side sees one come through.
	a.prodSock = b.sock
	probeThrough(t, b.sock, a.sock)
	total := envInt("FLOOD_MESSAGES", 20_000) // 200,000 is the flood
	st := a.run(t, total, 20_000_000, false)
	for _, s := range []*floodServer{a, b} {
		if strings.Contains(s.stderr.String(), "not reading") || strings.Contains(s.stderr.String(), "outbound queue") {
			t.Fatalf("a connection was cut off instead of slowed:\n%s", s.stderr.String())
		}
	}
	t.Logf("%d × 1 KiB from B to A's consumer in %v; peak RSS A %.1f MB, B %.1f MB",
		total, st.elapsed, procStatus(t, a.cmd.Process.Pid, "VmHWM"), procStatus(t, b.cmd.Process.Pid, "VmHWM"))
}

// probeThrough sends `<probe>` messages to the server at from until one
// reaches an observer of `<probe>` at the server at to.
func probeThrough(t *testing.T, from, to string) {
	obs, err := net.Dial("unix", to)
	require.NoError(t, err)
	defer obs.Close()
	_, err = obs.Write(rawPacket(t, `[[0 <A <Observe <group <rec probe> {}> #:[0 0]> 0>]]`))
	require.NoError(t, err)
	seen := make(chan struct{})
	go func() {
		dec := preserves.NewBinaryReader(bufio.NewReader(obs), preserves.DecodeOptions{})
		if _, err := dec.Next(); err == nil {
			close(seen)
		}
	}()
	prod, err := net.Dial("unix", from)
	require.NoError(t, err)
	defer prod.Close()
	deadline := time.After(20 * time.Second)
	for {
		_, err := prod.Write(rawPacket(t, `[[0 <M <probe>>]]`))
		require.NoError(t, err)
		select {
		case <-seen:
			return
		case <-deadline:
			t.Fatal("no probe crossed from B to A within 20 s")
		case <-time.After(50 * time.Millisecond): // the next probe
		}
	}
}
