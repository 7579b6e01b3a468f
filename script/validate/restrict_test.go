package validate

import (
	"strings"
	"testing"
)

// The restricting keys (issue 24) are checked by --check with positions;
// a misspelt one is an error (fail closed), an unknown user a warning.
func TestRestrictingKeys(t *testing.T) {
	valid := `<daemon a {argv: "a", user: "nobody", group: 65534, groups: ["nogroup" 0], umask: "027"}>
<daemon b {argv: "b", limits: {nofile: 1024, core: #f, nproc: [100 200], as: [1000000 #f]}}>
<daemon c {argv: "c", cgroup: {memoryMax: 100000000, pidsMax: 64, cpuMax: 0.5, cpuWeight: 100}}>
<daemon d {argv: "d", noNewPrivileges: #t, capabilities: [CAP_NET_BIND_SERVICE net_raw "cap_chown"]}>
<daemon e {argv: "e", envFile: "/etc/e.env"}>
<daemon f {argv: "f", envFile: ["/etc/f.env" "-/etc/f.local"]}>
`
	if errs := Source("ok.pr", []byte(valid)); len(errs) != 0 {
		t.Fatalf("valid keys rejected: %v", errs)
	}
	invalid := `<daemon a {argv: "a", usr: "nobody"}>
<daemon b {argv: "b", grup: "nogroup"}>
<daemon c {argv: "c", limit: {nofile: 10}}>
<daemon d {argv: "d", cgroups: {pidsMax: 10}}>
<daemon e {argv: "e", limits: {nofiles: 10}}>
<daemon f {argv: "f", cgroup: {memMax: 10}}>
<daemon g {argv: "g", umask: "089"}>
<daemon h {argv: "h", limits: {nofile: [20 10]}}>
<daemon i {argv: "i", capabilities: [CAP_NET_BIND_SERVIC]}>
<daemon j {argv: "j", user: 1.5}>
<daemon k {argv: "k", cgroup: {cpuWeight: 0}}>
<daemon l {argv: "l", user: "no-such-user-here"}>
`
	var got []string
	var warnings []bool
	for _, e := range Source("bad.pr", []byte(invalid)) {
		got = append(got, e.Error())
		warnings = append(warnings, e.Warning)
	}
	want := []string{
		`bad.pr:1:23: unknown key usr in a daemon spec (did you mean user?)`,
		`bad.pr:2:23: unknown key grup in a daemon spec (did you mean group?)`,
		`bad.pr:3:23: unknown key limit in a daemon spec (did you mean limits?)`,
		`bad.pr:4:23: unknown key cgroups in a daemon spec (did you mean cgroup?)`,
		`bad.pr:5:32: limits: unknown rlimit nofiles (did you mean nofile?)`,
		`bad.pr:6:32: cgroup: unknown key memMax (did you mean memoryMax?)`,
		`bad.pr:7:30: umask must be a string of octal digits`,
		`bad.pr:8:40: limits: nofile must be a number, #f (unlimited) or [SOFT HARD] with SOFT <= HARD`,
		`bad.pr:9:37: capabilities: unknown capability CAP_NET_BIND_SERVIC (did you mean CAP_NET_BIND_SERVICE?)`,
		`bad.pr:10:29: user must be a user name or a number, not 1.5`,
		`bad.pr:11:43: cgroup: cpuWeight must be an integer from 1 to 10000, not 0`,
		`bad.pr:12:29: warning: user: no-such-user-here does not exist here (yet)`,
	}
	if len(got) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("error %d:\n got  %s\n want %s…", i, got[i], want[i])
		}
		if warn := i == len(want)-1; warnings[i] != warn {
			t.Errorf("error %d: warning %v, want %v", i, warnings[i], warn)
		}
	}
}
