//go:build e2e

package main

import (
	"bufio"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/dataspace/relay"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
)

// BenchmarkFlood is issue 12's flood: a producer sends 200,000 messages of
// 1 KiB through the server's dataspace as fast as its socket takes them
// (it never waits for anything), and one consumer reads them at about
// 20 MB/s. It checks that every message arrives and reports the server's
// peak RSS, its CPU time, and its RSS a few seconds after the flood (issue
// 12 item 5: memory comes back), and the worst round trip another client
// saw meanwhile.
//
//	go test -tags e2e -run '^$' -bench Flood -benchtime 1x ./cmd/syndicate-server/
//
// FLOOD_MESSAGES and FLOOD_RATE (bytes per second) change the size.
func BenchmarkFlood(b *testing.B) {
	total := envInt("FLOOD_MESSAGES", 200_000)
	rate := envInt("FLOOD_RATE", 20_000_000)
	for i := 0; i < b.N; i++ {
		f := startFlood(b)
		stats := f.run(b, total, rate, true)
		b.ReportMetric(stats.peakMB, "peak-RSS-MB")
		b.ReportMetric(stats.cpu.Seconds(), "server-CPU-s")
		b.ReportMetric(stats.elapsed.Seconds(), "flood-s")
		b.ReportMetric(stats.afterMB, "RSS-5s-after-MB")
		b.ReportMetric(stats.idleMB, "idle-RSS-MB")
		b.ReportMetric(float64(stats.canary.Milliseconds()), "canary-worst-ms")
		f.stop(b)
	}
}

// A small flood in plain e2e runs: a producer that never waits, a consumer
// reading 20 MB/s; every message arrives, nobody is disconnected for
// "not reading", and the server's own memory stays small.
func TestE2EFloodEveryMessageDelivered(t *testing.T) {
	f := startFlood(t)
	st := f.run(t, 20_000, 20_000_000, false)
	if strings.Contains(f.stderr.String(), "not reading") {
		t.Fatalf("a reader was called not reading:\n%s", f.stderr.String())
	}
	t.Logf("peak RSS %.1f MB, %v", st.peakMB, st.elapsed)
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// floodServer is a server whose Unix-socket relay listener hands every
// connection $config itself, so that raw peers can publish and subscribe
// without a handshake.
type floodServer struct {
	*running
	sock string
	// prodSock is where the producer connects: sock, unless the flood
	// comes from another server (TestE2EFederationFlood).
	prodSock string
}

// startFlood starts the server; extra is more of its script.
func startFlood(tb testing.TB, extra ...string) *floodServer {
	dir := tb.TempDir()
	sock := filepath.Join(dir, "flood.sock")
	script := `<require-service <relay-listener <unix "` + sock + `"> $config>>` + "\n" + strings.Join(extra, "\n")
	if err := os.WriteFile(filepath.Join(dir, "flood.pr"), []byte(script), 0o644); err != nil {
		tb.Fatal(err)
	}
	f := &floodServer{running: start(tb, "-c", filepath.Join(dir, "flood.pr")), sock: sock, prodSock: sock}
	testutil.WaitFor(tb, "the flood listener", func() bool { return strings.Contains(f.stderr.String(), `"message":"listening"`) })
	return f
}

// procStatus reads a "VmXXX:" line of /proc/PID/status in MB.
func procStatus(tb testing.TB, pid int, field string) float64 {
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(st), "\n") {
		if strings.HasPrefix(line, field+":") {
			kb, _ := strconv.Atoi(strings.Fields(line)[1])
			return float64(kb) / 1024
		}
	}
	tb.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// procCPU is the user+system time of pid.
func procCPU(tb testing.TB, pid int) time.Duration {
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		tb.Fatal(err)
	}
	s := string(st)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.Atoi(fields[11])
	stt, _ := strconv.Atoi(fields[12])
	return time.Duration(ut+stt) * time.Second / 100 // USER_HZ
}

// rawPacket encodes a text-syntax packet in binary.
func rawPacket(tb testing.TB, text string) []byte {
	v, err := preserves.ParseText(text)
	if err != nil {
		tb.Fatal(err)
	}
	b, err := relay.AppendPacket(nil, v, relay.Binary)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

type floodStats struct {
	peakMB, afterMB, idleMB float64
	cpu, elapsed, canary    time.Duration // canary: another client's worst round trip
}

// pacedReader reads no faster than rate bytes per second.
type pacedReader struct {
	r     io.Reader
	rate  int
	begin time.Time
	n     int
}

func (p *pacedReader) Read(b []byte) (int, error) {
	if len(b) > 64<<10 {
		b = b[:64<<10]
	}
	if due := p.begin.Add(time.Duration(float64(p.n) / float64(p.rate) * float64(time.Second))); time.Now().Before(due) {
		time.Sleep(time.Until(due))
	}
	n, err := p.r.Read(b)
	p.n += n
	return n, err
}

// run floods the server and returns what it measured; with settle it also
// waits 5 s after the flood to measure the RSS then.
func (f *floodServer) run(tb testing.TB, total, rate int, settle bool) floodStats {
	pid := f.cmd.Process.Pid
	var st floodStats
	st.idleMB = procStatus(tb, pid, "VmRSS")
	cons, err := net.Dial("unix", f.sock)
	if err != nil {
		tb.Fatal(err)
	}
	defer cons.Close()
	// Observe every <flood _> for the consumer's oid 0, then sync (the
	// answer goes to its oid 1) so the subscription is in place before the
	// flood starts.
	if _, err := cons.Write(append(rawPacket(tb, `[[0 <A <Observe <group <rec flood> {0: <bind <_>>}> #:[0 0]> 0>]]`),
		rawPacket(tb, `[[0 <S #:[0 1]>]]`)...)); err != nil {
		tb.Fatal(err)
	}
	dec := preserves.NewBinaryReader(bufio.NewReaderSize(cons, 64<<10), preserves.DecodeOptions{})
	if _, err := dec.Next(); err != nil { // the sync's answer
		tb.Fatal(err)
	}

	prod, err := net.Dial("unix", f.prodSock)
	if err != nil {
		tb.Fatal(err)
	}
	defer prod.Close()
	msg := rawPacket(tb, `[[0 <M <flood #[`+strings.Repeat("A", 1368)+`]>>]]`) // 1 KiB of bytes (base64)
	canary := startCanary(tb, f.sock)
	cpu0 := procCPU(tb, pid)
	begin := time.Now()
	prodErr := make(chan error, 1)
	go func() {
		w := bufio.NewWriterSize(prod, 256<<10)
		for i := 0; i < total; i++ {
			if _, err := w.Write(msg); err != nil {
				prodErr <- err
				return
			}
		}
		prodErr <- w.Flush()
	}()

	paced := &pacedReader{r: bufio.NewReaderSize(cons, 64<<10), rate: rate, begin: time.Now()}
	dec = preserves.NewBinaryReader(paced, preserves.DecodeOptions{})
	got := 0
	for got < total {
		v, err := dec.Next()
		if err != nil {
			tb.Fatalf("after %d of %d messages (%v, server peak RSS %.1f MB): %v\nserver: %s",
				got, total, time.Since(begin), procStatus(tb, pid, "VmHWM"), err, f.stderr.String())
		}
		pkt, err := relay.ParsePacket(v)
		if err != nil {
			tb.Fatal(err)
		}
		got += len(pkt.Events)
	}
	st.elapsed = time.Since(begin)
	st.canary = canary.stop()
	if err := <-prodErr; err != nil {
		tb.Fatal(err)
	}
	st.cpu = procCPU(tb, pid) - cpu0
	st.peakMB = procStatus(tb, pid, "VmHWM")
	prod.Close()
	cons.Close()
	if settle {
		time.Sleep(5 * time.Second) // what the figure measures, not synchronisation
		st.afterMB = procStatus(tb, pid, "VmRSS")
	}
	return st
}
