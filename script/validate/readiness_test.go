package validate

import (
	"strings"
	"testing"
)

// The readiness keys are checked by --check with positions, the same
// rules as the daemon service applies at run time.
func TestReadinessKeys(t *testing.T) {
	valid := `<daemon a {argv: "a", readiness: <notification-fd 3>}>
<daemon b {argv: "b", readiness: sd-notify, watchdog: 2, readyTimeout: 30}>
<daemon c {argv: "c", readiness: <tcp 8080>, readyTimeout: 0}>
<daemon d {argv: "d", readiness: <tcp "::1" 8080>}>
<daemon e {argv: "e", readiness: <unix "/run/e.sock">, readyOnStart: #f}>
`
	if errs := Source("ok.pr", []byte(valid)); len(errs) != 0 {
		t.Fatalf("valid readiness rejected: %v", errs)
	}
	invalid := `<daemon a {argv: "a", readiness: <notification-fd 1>}>
<daemon b {argv: "b", readiness: systemd}>
<daemon c {argv: "c", readiness: <tcp 70000>}>
<daemon d {argv: "d", readiness: <unix 3>}>
<daemon e {argv: "e", readiness: sd-notify, readyOnStart: #t}>
<daemon f {argv: "f", readiness: <tcp 1>, watchdog: 5}>
<daemon g {argv: "g", watchdog: 5}>
<daemon h {argv: "h", readiness: sd-notify, readyTimeout: -1, watchdog: 0}>
`
	var got []string
	for _, e := range Source("bad.pr", []byte(invalid)) {
		got = append(got, e.Error())
	}
	want := []string{
		"bad.pr:1:51: notification-fd (0-2 are stdio) must be an integer from 3 to 255, not 1",
		"bad.pr:2:34: readiness: systemd is not a readiness protocol",
		"bad.pr:3:39: tcp port must be an integer from 1 to 65535, not 70000",
		"bad.pr:4:40: unix socket path must be a string, not 3",
		"bad.pr:5:59: readyOnStart: #t contradicts the readiness protocol",
		"bad.pr:6:53: watchdog needs readiness: sd-notify",
		"bad.pr:7:33: watchdog needs a readiness protocol",
		"bad.pr:8:59: readyTimeout must be a non-negative number of seconds, not -1",
		"bad.pr:8:73: watchdog must be a positive number of seconds, not 0",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("error %d:\n got  %s\n want %s…", i, got[i], want[i])
		}
	}
}
