package daemon

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/syndicate-go/syndicate/services"
)

// worldDir is a directory any user may write to, removed after the test
// (t.TempDir's parents are private to root).
func worldDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "syndicate-exec-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// report is what the daemon writes about itself, from inside.
const idReport = `id -u; id -g; id -G; umask; ulimit -Sn; ulimit -Hn; grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs):' /proc/self/status`

// runIDReport runs a one-shot daemon with keys that writes report to a file
// and returns the file's lines.
func runIDReport(t *testing.T, keys string) []string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to change user") // CI and this machine run as root
	}
	h, _ := bootDaemons(t, Options{})
	out := filepath.Join(worldDir(t), "report")
	require(h, "d", pv(t, fmt.Sprintf(`{argv: ["sh" "-c" "(%s) > %s 2>&1"], restart: on-error, readyOnStart: #f, %s}`, idReport, out, keys)))
	h.waitHas(state("d", services.StateComplete), true)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// Issue 24: every control is in force in the daemon, read from inside it.
func TestExecControlsAsNobody(t *testing.T) {
	parallel(t)
	got := runIDReport(t, `user: "nobody", group: 65534, groups: [65534 100], umask: "027",
		limits: {nofile: [512 1024]}, noNewPrivileges: #t, capabilities: [CAP_NET_BIND_SERVICE]`)
	want := []string{
		"65534", "65534", "65534 100", "0027", "512", "1024",
		"CapInh:\t0000000000000400",
		"CapPrm:\t0000000000000400",
		"CapEff:\t0000000000000400",
		"CapBnd:\t0000000000000400",
		"CapAmb:\t0000000000000400",
		"NoNewPrivs:\t1",
	}
	checkReport(t, got, want)
}

// A root daemon's capabilities are its bounding set; without
// noNewPrivileges it may gain privileges; the user's groups come from the
// group database.
func TestExecControlsRootBoundingSet(t *testing.T) {
	parallel(t)
	got := runIDReport(t, `user: 0, capabilities: [net_bind_service "CAP_KILL"], limits: {nofile: 64}`)
	want := []string{
		"0", "0", "0", "0022", "64", "64",
		"CapInh:\t0000000000000000",
		"CapPrm:\t0000000000000420",
		"CapEff:\t0000000000000420",
		"CapBnd:\t0000000000000420",
		"CapAmb:\t0000000000000000",
		"NoNewPrivs:\t0",
	}
	checkReport(t, got, want)
}

func checkReport(t *testing.T, got, want []string) {
	t.Helper()
	names := []string{"id -u", "id -g", "id -G", "umask", "ulimit -Sn", "ulimit -Hn"}
	if len(got) != len(want) {
		t.Fatalf("report %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			what := "status"
			if i < len(names) {
				what = names[i]
			}
			t.Errorf("%s: %q, want %q", what, got[i], want[i])
		}
	}
}

// An unknown user at run time is a cannot-start reason; the daemon never
// runs as anyone else.
func TestExecUnknownUserCannotStart(t *testing.T) {
	parallel(t)
	h, _ := bootDaemons(t, Options{})
	require(h, "d", pv(t, `{argv: "echo ran", user: "no-such-user-here"}`))
	i := h.waitInfo(t, "d", func(i services.Info) bool { return len(i.Reasons) > 0 }, "reason")
	if !strings.Contains(strings.Join(i.Reasons, " "), "no such user or group: user no-such-user-here") {
		t.Errorf("reasons %q", i.Reasons)
	}
	if i.Phase != services.PhaseCannotStart {
		t.Errorf("phase %q, want cannot-start", i.Phase)
	}
	if len(h.output("d")) != 0 {
		t.Errorf("the daemon ran: %q", h.output("d"))
	}
}

// envFile is read at every start, after env; a missing file is a
// cannot-start reason unless its path starts with -. LISTEN_FDS makes the
// helper set LISTEN_PID to the daemon's own pid.
func TestEnvFileAndListenPID(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	f := filepath.Join(dir, "env")
	if err := os.WriteFile(f, []byte("# comment\nA=from-file\nexport B='quoted value'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h, _ := bootDaemons(t, Options{})
	require(h, "d", pv(t, fmt.Sprintf(`{argv: "echo $A/$B/$C; [ $LISTEN_PID = $$ ] && echo pid-ok", restart: on-error, readyOnStart: #f,
		env: {A: "from-env", C: "c", LISTEN_FDS: "0"}, envFile: [%q "-%s/missing"]}`, f, dir)))
	h.waitHas(state("d", services.StateComplete), true)
	var lines []string
	for _, l := range h.output("d") {
		lines = append(lines, strings.TrimSpace(fmt.Sprint(l.line)))
	}
	if got := strings.Join(lines, "|"); got != `"from-file/quoted value/c\n"|"pid-ok\n"` {
		t.Errorf("output %q", got)
	}

	h2, _ := bootDaemons(t, Options{})
	require(h2, "e", pv(t, fmt.Sprintf(`{argv: "echo ran", envFile: "%s/missing"}`, dir)))
	i := h2.waitInfo(t, "e", func(i services.Info) bool { return len(i.Reasons) > 0 }, "reason")
	if !strings.Contains(strings.Join(i.Reasons, " "), "environment file not found") {
		t.Errorf("reasons %q", i.Reasons)
	}
}

// A daemon running as another user still reaches its readiness fd and
// its sd-notify socket.
func TestReadinessAsAnotherUser(t *testing.T) {
	parallel(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root to change user")
	}
	h, _ := bootDaemons(t, Options{})
	require(h, "fd", pv(t, `{argv: "echo >&3; exec sleep 100", user: "nobody", readiness: <notification-fd 3>, readyTimeout: 20}`))
	h.waitHas(state("fd", services.StateReady), true)
	if _, err := exec.LookPath("systemd-notify"); err != nil {
		t.Skip("no systemd-notify to test sd-notify with")
	}
	require(h, "sd", pv(t, `{argv: "systemd-notify --ready; exec sleep 100", user: "nobody", readiness: sd-notify, readyTimeout: 20}`))
	h.waitHas(state("sd", services.StateReady), true)
}
