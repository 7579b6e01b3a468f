//go:build e2e

package main

// End-to-end tests: build the real binary and run it as a user would, on
// temporary config directories, with real daemons. Run with
//
//	go test -race -tags e2e ./cmd/...

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/caveat"
	"github.com/syndicate-go/syndicate/dataspace/relay/client"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
	"github.com/syndicate-go/syndicate/services"
	"github.com/syndicate-go/syndicate/services/daemon/cgroup"
	"github.com/syndicate-go/syndicate/services/daemon/ledger"
)

var serverBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "syndicate-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serverBin = filepath.Join(dir, "syndicate-server")
	// Every server's locks (services/instance) in a runtime directory of
	// this run's own, removed with it.
	os.Setenv("XDG_RUNTIME_DIR", filepath.Join(dir, "run"))
	build := exec.Command("go", "build", "-o", serverBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building syndicate-server:", err)
		os.Exit(1)
	}
	if old := os.Getenv("SYNDICATE_E2E_SERVER"); old != "" {
		serverBin = old // measure another build (e.g. before a change) with the same tests
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type running struct {
	cmd    *exec.Cmd
	stdout *testutil.Buffer
	stderr *testutil.Buffer
	done   chan struct{}
	err    error
}

// start runs the server; if the test did not stop it, the test's cleanup
// stops it with SIGTERM (so that it stops its daemons), then kills its
// process group.
func start(t testing.TB, args ...string) *running { return startWrapped(t, nil, args...) }

// startWrapped is start with the server run by a wrapper command (wrapper
// followed by the server's path and arguments).
func startWrapped(t testing.TB, wrapper []string, args ...string) *running {
	t.Helper()
	r := &running{stdout: &testutil.Buffer{}, stderr: &testutil.Buffer{}, done: make(chan struct{})}
	argv := append(append(append([]string(nil), wrapper...), serverBin, "--no-banner", "--log-format", "json", "--admin-socket", "-"), args...)
	r.cmd = exec.Command(argv[0], argv[1:]...)
	r.cmd.Stdout, r.cmd.Stderr = r.stdout, r.stderr
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, r.cmd.Start())
	go func() { r.err = r.cmd.Wait(); close(r.done) }()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(r.stderr.String(), `"message":"server running"`) {
		select {
		case <-r.done:
			deadline = time.Now() // exited during start-up: let the test look at why
		default:
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			if wrapper == nil {
				// A clean stop first: the server's daemons run in
				// cgroups and process groups of their own, which a kill
				// of the server's group does not reach.
				syscall.Kill(r.cmd.Process.Pid, syscall.SIGTERM)
				select {
				case <-r.done:
				case <-time.After(15 * time.Second):
				}
			}
			syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
			<-r.done
		}
		reapKilled(t, r.cmd.Process.Pid)
		if t.Failed() {
			t.Logf("server stderr:\n%s", r.stderr.String())
		}
	})
	return r
}

// reapKilled removes what server pid left if it did not stop in order (a
// test killed it): its daemons and their cgroups, through the record the
// next server would use (services/daemon/ledger), the empty cgroup
// directories of dead servers, and its lock files. After a clean stop
// there is nothing to remove.
func reapKilled(t testing.TB, pid int) {
	t.Helper()
	dir := services.RuntimeDir()
	found, err := ledger.Recover(dir, []int{pid})
	for _, f := range found {
		t.Logf("stopped a daemon process server %d left: %+v", pid, f)
	}
	if err != nil {
		t.Errorf("the record of server %d: %v", pid, err)
	}
	if err := cgroup.Sweep(); err != nil {
		t.Logf("sweeping cgroups: %v", err)
	}
	locks, _ := filepath.Glob(filepath.Join(dir, "*.lock"))
	for _, l := range locks {
		f, err := os.OpenFile(l, os.O_RDWR|syscall.O_NOFOLLOW, 0)
		if err != nil {
			continue
		}
		b := make([]byte, 32)
		n, _ := f.Read(b)
		first, _, _ := strings.Cut(string(b[:n]), " ")
		// Removed only while locked, as the server itself does: a new
		// holder never loses its file.
		if first == strconv.Itoa(pid) && syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			os.Remove(l)
		}
		f.Close()
	}
}

// stop sends SIGTERM and waits for the exit status.
func (r *running) stop(t testing.TB) int {
	t.Helper()
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-r.done:
	case <-time.After(20 * time.Second):
		t.Fatal("server did not exit within 20 s of SIGTERM")
	}
	return exitCode(r.err)
}

func (r *running) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(within):
		t.Fatalf("server did not exit within %v", within)
	}
	return exitCode(r.err)
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	tmp := path + ".tmp~"
	require.NoError(t, os.WriteFile(tmp, []byte(content), 0o644))
	require.NoError(t, os.Rename(tmp, path))
}

func fileExists(path string) bool { _, err := os.Stat(path); return err == nil }

func readPid(t *testing.T, path string) int {
	t.Helper()
	pid, ok := tryReadPid(path)
	require.True(t, ok, "no pid in %s", path)
	return pid
}

// tryReadPid reads a pid file, which the daemon may not have finished
// writing yet (the shell creates it before writing).
func tryReadPid(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid, err == nil && pid > 0
}

// waitPid waits until path holds a pid and returns it.
func waitPid(t *testing.T, path, what string) int {
	t.Helper()
	var pid int
	eventually(t, 10*time.Second, what, func() bool {
		var ok bool
		pid, ok = tryReadPid(path)
		return ok
	})
	return pid
}

// alive reports whether a process (or, for negative pid, a process group)
// still exists and is not a zombie.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	if pid < 0 {
		return true
	}
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

// daemonScript is a config file requiring a daemon that records its pid in
// pidFile and then sleeps; grandchild adds a second process in its group.
func daemonScript(name, pidFile string, grandchild bool) string {
	cmd := fmt.Sprintf("echo $$ > %s; exec sleep 1000", pidFile)
	if grandchild {
		cmd = fmt.Sprintf("sleep 1000 & echo $$ > %s; wait", pidFile)
	}
	return fmt.Sprintf("<require-service <daemon %s>>\n<daemon %s %q>\n", name, name, cmd)
}

func TestE2EScenario01NoBannerStdoutQuiet(t *testing.T) {
	r := start(t)
	// With nothing to do the server keeps running until told to stop: a
	// SIGTERM is answered with an orderly exit 0.
	require.Equal(t, 0, r.stop(t))
	require.Empty(t, r.stdout.String(), "nothing is printed to stdout")
}

func TestE2EDaemonsStartEditDelete(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config")
	pidA := filepath.Join(dir, "a.pid")
	pidB := filepath.Join(dir, "b.pid")
	writeFile(t, filepath.Join(cfg, "a.pr"), daemonScript("a", pidA, false))
	r := start(t, "-c", cfg)

	a := waitPid(t, pidA, "daemon a to start")
	require.True(t, alive(a))

	// Editing the script live replaces what runs.
	writeFile(t, filepath.Join(cfg, "a.pr"), daemonScript("b", pidB, false))
	waitPid(t, pidB, "daemon b to start")
	eventually(t, 10*time.Second, "daemon a to be stopped", func() bool { return !alive(a) })
	b := readPid(t, pidB)

	// Deleting it stops the daemon.
	require.NoError(t, os.Remove(filepath.Join(cfg, "a.pr")))
	eventually(t, 10*time.Second, "daemon b to be stopped", func() bool { return !alive(b) })

	require.Equal(t, 0, r.stop(t))
}

func TestE2EBrokenScriptNeverStopsOthers(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config")
	pid := filepath.Join(dir, "good.pid")
	writeFile(t, filepath.Join(cfg, "a-syntax.pr"), "<require-service <daemon x>\n")
	writeFile(t, filepath.Join(cfg, "b-compile.pr"), "? <x> ?y\n")
	writeFile(t, filepath.Join(cfg, "c-runtime.pr"), "<foo $undefined>\n")
	writeFile(t, filepath.Join(cfg, "d-good.pr"), daemonScript("good", pid, false))
	r := start(t, "-c", cfg)
	waitPid(t, pid, "the good daemon to start")
	eventually(t, 5*time.Second, "every error to be logged with its place", func() bool {
		s := r.stderr.String()
		return strings.Contains(s, "a-syntax.pr:2:1") && strings.Contains(s, "b-compile.pr:1:") &&
			strings.Contains(s, "c-runtime.pr:1:") && strings.Contains(s, "undefined")
	})
	require.True(t, alive(readPid(t, pid)))
	require.Equal(t, 0, r.stop(t))
}

func TestE2ECheckReportsPositions(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ok.pr"), "<hello>\n")
	writeFile(t, filepath.Join(dir, "sub", "bad.pr"), "# comment\n<a>\n  ? <x> ?y\n")
	extra := filepath.Join(t.TempDir(), "extra.pr")
	writeFile(t, extra, "[\n")

	cmd := exec.Command(serverBin, "--check", "-c", dir, extra)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	require.Equal(t, 1, exitCode(err), "stderr: %s", errb.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 2, out.String())
	require.Regexp(t, `^`+regexpQuote(filepath.Join(dir, "sub", "bad.pr"))+`:3:9: `, lines[0])
	require.Regexp(t, `^`+regexpQuote(extra)+`:2:1: `, lines[1])

	ok := exec.Command(serverBin, "--check", filepath.Join(dir, "ok.pr"))
	require.NoError(t, ok.Run(), "a clean script checks with status 0")
}

func regexpQuote(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\.+*?()|[]{}^$`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func TestE2ESigtermLeavesNoProcessBehind(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config")
	pid := filepath.Join(dir, "g.pid")
	writeFile(t, filepath.Join(cfg, "g.pr"), daemonScript("g", pid, true))
	r := start(t, "-c", cfg)
	g := waitPid(t, pid, "daemon g to start")
	require.True(t, alive(-g), "the daemon has its own process group")

	begin := time.Now()
	require.Equal(t, 0, r.stop(t))
	require.Less(t, time.Since(begin), 10*time.Second)
	require.False(t, alive(-g), "the daemon's process group is gone after shutdown")
	require.False(t, alive(-r.cmd.Process.Pid), "nothing is left in the server's process group")
}

func TestE2EControlExit(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "f.pr"), "$control ! <exit 2>\n")
	r := start(t, "--control", "-c", dir)
	require.Equal(t, 2, r.wait(t, 10*time.Second))

	// Without --control, $control is undefined: the file's facet stops and
	// the server keeps running.
	r = start(t, "-c", dir)
	eventually(t, 5*time.Second, "the runtime error to be logged", func() bool {
		return strings.Contains(r.stderr.String(), "f.pr:1:1")
	})
	require.Equal(t, 0, r.stop(t))
}

func TestE2EShippedConfig(t *testing.T) {
	r := start(t, "-c", "../../etc/syndicate")
	eventually(t, 10*time.Second, "the one-shot daemon's output", func() bool {
		return strings.Contains(r.stderr.String(), "hello from a one-shot daemon")
	})
	eventually(t, 10*time.Second, "the heartbeat daemon", func() bool {
		return strings.Contains(r.stderr.String(), "heartbeat from etc/services")
	})
	require.NotContains(t, r.stderr.String(), `"level":"error"`)
	require.Equal(t, 0, r.stop(t))
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Scenarios 2 and 55 of services spec §13: -p PORT starts a listener whose
// oid 0 is the gatekeeper; a client resolves a sturdy ref bound in $config
// and talks to the config dataspace through it.
func TestE2ETCPListenerAndSturdyRef(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "bind.pr"), `<bind <ref {oid: "e2e", key: #"secret"}> $config #f>
?? <ping ?x> $log ! <log "-" {line: $x}>
`)
	port := freePort(t)
	r := start(t, "-p", strconv.Itoa(port), "-c", dir)
	eventually(t, 10*time.Second, "the listener", func() bool { return strings.Contains(r.stderr.String(), `"message":"listening"`) })

	sys := dataspace.NewSystem(dataspace.Options{})
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, sys.Shutdown(ctx))
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, gk, err := client.Dial(ctx, sys, preserves.Rec("tcp", preserves.String("127.0.0.1"), preserves.Int(int64(port))))
	require.NoError(t, err)

	bad := caveat.Mint(preserves.String("e2e"), []byte("wrong key"))
	_, _, err = client.Resolve(ctx, sys, gk, bad.ToValue())
	require.Error(t, err, "a forged sturdy ref is refused")

	good := caveat.Mint(preserves.String("e2e"), []byte("secret"))
	cfg, release, err := client.Resolve(ctx, sys, gk, good.ToValue())
	require.NoError(t, err)
	defer release()
	sys.Spawn("pinger", func(t *dataspace.Turn) error {
		t.Message(cfg, preserves.Rec("ping", preserves.String("over tcp")))
		return nil
	})
	eventually(t, 10*time.Second, "the message to reach the script", func() bool {
		return strings.Contains(r.stderr.String(), `"line":"over tcp"`)
	})
	// The disconnect is logged when the client goes (not at shutdown: the
	// connection's actor used to outlive it), with the connection's name
	// (its fields are added only when it logs).
	conn.Close()
	eventually(t, 10*time.Second, "the disconnect, naming the connection", func() bool {
		return regexp.MustCompile(`"conn":"<tcp \\"127\.0\.0\.1:\d+\\">".*"message":"disconnect"`).MatchString(r.stderr.String())
	})
	require.Equal(t, 0, r.stop(t))
}

// Scenario 6: with --inferior the parent sees the config dataspace at oid 0.
func TestE2EInferior(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "watch.pr"), `? <from-parent ?x> $log ! <log "-" {line: $x}>`+"\n")
	cmd := exec.Command(serverBin, "--inferior", "--log-format", "json", "--admin-socket", "-", "-c", dir)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr := &testutil.Buffer{}
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	defer func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	}()
	// Text-syntax packets: assert <from-parent "hi"> at oid 0 with handle 1.
	_, err = io.WriteString(stdin, `[[0 <A <from-parent "hi"> 1>]]`+"\n")
	require.NoError(t, err)
	go io.Copy(io.Discard, stdout)
	eventually(t, 10*time.Second, "the parent's assertion to reach the script", func() bool {
		return strings.Contains(stderr.String(), `"line":"hi"`)
	})
	// Closing stdin ends the session; the server keeps running (Q1).
	stdin.Close()
	eventually(t, 10*time.Second, "the disconnect to be logged", func() bool {
		return strings.Contains(stderr.String(), "disconnect")
	})
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait())
}

// SIGHUP rescans the config directories; unchanged files keep running.
func TestE2ESighupKeepsUnchangedDaemons(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config")
	pid := filepath.Join(dir, "d.pid")
	writeFile(t, filepath.Join(cfg, "d.pr"), daemonScript("d", pid, false))
	r := start(t, "-c", cfg)
	d := waitPid(t, pid, "daemon d")
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGHUP))
	eventually(t, 5*time.Second, "the rescan", func() bool { return strings.Contains(r.stderr.String(), "SIGHUP") })
	// A later edit is still picked up after the rescan, and d was not
	// restarted by it.
	writeFile(t, filepath.Join(cfg, "e.pr"), `$log ! <log "-" {line: "after hup"}>`+"\n")
	eventually(t, 10*time.Second, "the new file", func() bool { return strings.Contains(r.stderr.String(), "after hup") })
	require.True(t, alive(d))
	require.Equal(t, d, readPid(t, pid), "the daemon of an unchanged file was not restarted")
	require.Equal(t, 0, r.stop(t))
}

// TestE2EDryRunShippedConfig: --dry-run on the shipped etc/syndicate prints
// the services that would run, dependencies first, starts no process, and
// exits 0. The output is compared with a golden file (-update rewrites it);
// the repository's absolute path is written as $ROOT.
func TestE2EDryRunShippedConfig(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	cmd := exec.Command(serverBin, "--dry-run", "--no-banner", "--log-format", "json", "-c", "etc/syndicate", "-p", "9")
	cmd.Dir = root
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Run(), "stderr: %s", errb.String())
	got := strings.ReplaceAll(out.String(), root, "$ROOT")
	golden := filepath.Join("testdata", "dryrun-shipped.golden")
	if *update {
		require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	require.Equal(t, string(want), got)
	require.Contains(t, errb.String(), "dry run: would start process")
	require.NotContains(t, errb.String(), `"line":"hello from`, "no process ran (its output would be logged)")
	require.NotContains(t, errb.String(), `"message":"listening"`, "no socket was bound")
}

// buildClient builds cmd/syndicate next to the server binary.
func buildClient(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(filepath.Dir(serverBin), "syndicate")
	if !fileExists(bin) {
		build := exec.Command("go", "build", "-o", bin, "../syndicate")
		out, err := build.CombinedOutput()
		require.NoError(t, err, "building syndicate: %s", out)
	}
	return bin
}

// Operator issue: the CLI against a running server. `status --json` shows a
// crash-looping daemon's restart count rising; `observe` sees an assertion
// made with `assert` appear and vanish when the assert is interrupted.
func TestE2EClientAgainstServer(t *testing.T) {
	client := buildClient(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "run", "admin.sock")
	cfg := filepath.Join(dir, "config")
	writeFile(t, filepath.Join(cfg, "flap.pr"), `<require-service <daemon flap>>
<daemon flap {argv: ["sh" "-c" "sleep 0.5; exit 3"], restart: on-error}>
`)
	r := start(t, "-c", cfg, "--admin-socket", sock)
	fi, err := os.Stat(sock)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the admin socket is private to the server's user")

	restarts := func() int64 {
		out, err := exec.Command(client, "--admin", sock, "status", "--json", "<daemon flap>").Output()
		if err != nil {
			return -1
		}
		var services []struct {
			Name      string `json:"name"`
			Processes []struct {
				Restarts int64 `json:"restarts"`
			} `json:"processes"`
		}
		if json.Unmarshal(out, &services) != nil {
			return -1
		}
		best := int64(-1)
		for _, s := range services {
			for _, p := range s.Processes {
				best = max(best, p.Restarts)
			}
		}
		return best
	}
	var first int64
	eventually(t, 15*time.Second, "a process-status for the flapping daemon", func() bool {
		first = restarts()
		return first >= 0
	})
	eventually(t, 15*time.Second, "the restart count to rise", func() bool { return restarts() > first })

	// observe, in the background, sees what `assert` holds, and its going.
	obsOut := &testutil.Buffer{}
	obs := exec.Command(client, "--admin", sock, "observe", "<e2e-note ?x>")
	obs.Stdout, obs.Stderr = obsOut, obsOut
	require.NoError(t, obs.Start())
	defer func() { obs.Process.Kill(); obs.Wait() }()
	asserter := exec.Command(client, "--admin", sock, "assert", `<e2e-note "hello">`)
	require.NoError(t, asserter.Start())
	eventually(t, 10*time.Second, "observe to see the assertion", func() bool {
		return strings.Contains(obsOut.String(), `+ <e2e-note "hello">`)
	})
	require.NoError(t, asserter.Process.Signal(syscall.SIGINT))
	asserter.Wait()
	eventually(t, 10*time.Second, "observe to see it vanish", func() bool {
		return strings.Contains(obsOut.String(), `- <e2e-note "hello">`)
	})
	require.Equal(t, 0, r.stop(t))
}

// -t writes a causal trace (trace.prs entries in text syntax, one per line);
// --debt-reporter runs the debt reporter, which logs scheduler statistics.
func TestE2ETraceFileAndDebtReporter(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "trace.pr")
	r := start(t, "--debt-reporter", "-t", trace)
	eventually(t, 10*time.Second, "the debt reporter's statistics", func() bool {
		return strings.Contains(r.stderr.String(), "debt reporter: scheduler statistics")
	})
	require.Equal(t, 0, r.stop(t))

	f, err := os.Open(trace)
	require.NoError(t, err)
	defer f.Close()
	rd := preserves.NewTextReader(f, preserves.TextOptions{File: trace})
	kinds := map[string]int{}
	n := 0
	for {
		v, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		rec, ok := v.(*preserves.Record)
		require.True(t, ok && preserves.Equal(rec.Label, preserves.Symbol("trace")) && len(rec.Fields) == 3, "entry %d: %v", n, v)
		item, ok := rec.Fields[2].(*preserves.Record)
		require.True(t, ok, "entry %d: %v", n, v)
		kinds[preserves.FormatText(item.Label)]++
		n++
	}
	require.Greater(t, kinds["start"], 0, "actor starts are traced")
	require.Greater(t, kinds["turn"], 0, "turns are traced")
	require.Greater(t, kinds["stop"], 0, "actor stops are traced")
}
