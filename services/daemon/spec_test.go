package daemon

import (
	"errors"
	"slices"
	"testing"
	"time"

	p "github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/schema"
)

func sym(s string) p.Value { return p.Symbol(s) }
func str(s string) p.Value { return p.String(s) }

func dict(kvs ...p.Value) *p.Dictionary { return p.Dict(kvs...) }

func TestParseSpecForms(t *testing.T) {
	parallel(t)
	tests := []struct {
		name string
		in   p.Value
		want Spec
	}{
		{"shell string", str("echo hi"),
			Spec{Argv: []string{"sh", "-c", "echo hi"}, ReadyOnStart: true, Restart: RestartAlways, StopTimeout: DefaultStopTimeout}},
		{"argv array", p.Sequence{str("/usr/bin/tool"), str("--verbose")},
			Spec{Argv: []string{"/usr/bin/tool", "--verbose"}, ReadyOnStart: true, Restart: RestartAlways, StopTimeout: DefaultStopTimeout}},
		{"one-shot", p.Rec("one-shot", str("mkdir -p /tmp/x")),
			Spec{Argv: []string{"sh", "-c", "mkdir -p /tmp/x"}, ReadyOnStart: false, Restart: RestartOnError, StopTimeout: DefaultStopTimeout}},
		{"one-shot extra field tolerated", p.Rec("one-shot", p.Sequence{str("true")}, p.Int(1)),
			Spec{Argv: []string{"true"}, Restart: RestartOnError, StopTimeout: DefaultStopTimeout}},
		{"full defaults", dict(sym("argv"), str("pwd")),
			Spec{Argv: []string{"sh", "-c", "pwd"}, ReadyOnStart: true, Restart: RestartAlways, StopTimeout: DefaultStopTimeout}},
		{"full form", dict(
			sym("argv"), p.Sequence{str("./app")},
			sym("dir"), str("/srv/app"),
			sym("env"), dict(sym("PORT"), str("8080"), str("DEBUG"), p.Bool(false)),
			sym("clearEnv"), p.Bool(true),
			sym("readyOnStart"), p.Bool(false),
			sym("restart"), sym("on-error"),
			sym("protocol"), sym("application/syndicate"),
			sym("stopTimeout"), p.NewDouble(0.5),
			sym("unknownExtra"), p.Int(7)),
			Spec{Argv: []string{"./app"}, Dir: "/srv/app", ClearEnv: true,
				// Dictionary order: strings sort before symbols.
				Env:          []EnvChange{{Name: "DEBUG", Remove: true}, {Name: "PORT", Value: "8080"}},
				ReadyOnStart: false, Restart: RestartOnError, Protocol: ProtocolBinary, StopTimeout: 500 * time.Millisecond}},
		{"restart all, text protocol, integer stopTimeout", dict(sym("argv"), str("x"), sym("restart"), sym("all"), sym("protocol"), sym("text/syndicate"), sym("stopTimeout"), p.Int(2)),
			Spec{Argv: []string{"sh", "-c", "x"}, ReadyOnStart: true, Restart: RestartAll, Protocol: ProtocolText, StopTimeout: 2 * time.Second}},
		{"restart never", dict(sym("argv"), str("x"), sym("restart"), sym("never")),
			Spec{Argv: []string{"sh", "-c", "x"}, ReadyOnStart: true, Restart: RestartNever, StopTimeout: DefaultStopTimeout}},
		{"annotated everywhere", &p.Annotated{Pos: p.Pos{File: "f.pr", Line: 1, Col: 1}, Item: p.Sequence{&p.Annotated{Item: str("ls")}}},
			Spec{Argv: []string{"ls"}, ReadyOnStart: true, Restart: RestartAlways, StopTimeout: DefaultStopTimeout}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSpec(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Argv, tc.want.Argv) || !slices.Equal(got.Env, tc.want.Env) ||
				got.Dir != tc.want.Dir || got.ClearEnv != tc.want.ClearEnv || got.ReadyOnStart != tc.want.ReadyOnStart ||
				got.Restart != tc.want.Restart || got.Protocol != tc.want.Protocol || got.StopTimeout != tc.want.StopTimeout {
				t.Errorf("got %+v\nwant %+v", *got, tc.want)
			}
		})
	}
}

func TestParseSpecErrors(t *testing.T) {
	parallel(t)
	pos := p.Pos{File: "etc/d.pr", Line: 3, Col: 9}
	tests := []struct {
		name  string
		in    p.Value
		class error
	}{
		{"integer", p.Int(42), ErrNotASpec},
		{"empty array", p.Sequence{}, ErrNotASpec},
		{"non-string element", p.Sequence{str("a"), p.Int(1)}, ErrNotASpec},
		{"other record", p.Rec("two-shot", str("x")), ErrNotASpec},
		{"one-shot without command", p.Rec("one-shot"), ErrNotASpec},
		{"one-shot bad command", p.Rec("one-shot", p.Int(1)), ErrNotASpec},
		{"dict without argv", dict(sym("dir"), str("/")), ErrNotASpec},
		{"dict bad argv", dict(sym("argv"), p.Sequence{}), ErrNotASpec},
		{"bad dir", dict(sym("argv"), str("x"), sym("dir"), p.Int(1)), ErrInvalidField},
		{"bad clearEnv", dict(sym("argv"), str("x"), sym("clearEnv"), str("yes")), ErrInvalidField},
		{"env not dict", dict(sym("argv"), str("x"), sym("env"), p.Sequence{}), ErrInvalidField},
		{"env bad key", dict(sym("argv"), str("x"), sym("env"), dict(p.Int(1), str("v"))), ErrInvalidField},
		{"env bad value", dict(sym("argv"), str("x"), sym("env"), dict(sym("A"), p.Int(1))), ErrInvalidField},
		{"env #t", dict(sym("argv"), str("x"), sym("env"), dict(sym("A"), p.Bool(true))), ErrInvalidField},
		{"bad readyOnStart", dict(sym("argv"), str("x"), sym("readyOnStart"), p.Int(0)), ErrInvalidField},
		{"bad restart", dict(sym("argv"), str("x"), sym("restart"), sym("sometimes")), ErrInvalidField},
		{"bad protocol", dict(sym("argv"), str("x"), sym("protocol"), sym("http")), ErrInvalidField},
		{"bad stopTimeout", dict(sym("argv"), str("x"), sym("stopTimeout"), p.Int(-1)), ErrInvalidField},
		{"schedule not a string", dict(sym("argv"), str("x"), sym("schedule"), p.Int(5)), ErrInvalidField},
		{"schedule not cron", dict(sym("argv"), str("x"), sym("schedule"), str("every tuesday")), ErrInvalidField},
		{"schedule six fields", dict(sym("argv"), str("x"), sym("schedule"), str("0 0 3 * * *")), ErrInvalidField},
		{"schedule bad env TZ", dict(sym("argv"), str("x"), sym("schedule"), str("@daily"), sym("env"), dict(sym("TZ"), str("Nowhere/Atlantis"))), ErrInvalidField},
		{"catchUp without schedule", dict(sym("argv"), str("x"), sym("catchUp"), p.Bool(true)), ErrInvalidField},
		{"schedule with readiness", dict(sym("argv"), str("x"), sym("schedule"), str("@daily"), sym("readiness"), sym("sd-notify")), ErrInvalidField},
		{"listen not a sequence", dict(sym("argv"), str("x"), sym("listen"), str("127.0.0.1:80")), ErrInvalidField},
		{"listen empty", dict(sym("argv"), str("x"), sym("listen"), p.Sequence{}), ErrInvalidField},
		{"listen bad address", dict(sym("argv"), str("x"), sym("listen"), p.Sequence{p.Rec("udp", str("x"))}), ErrInvalidField},
		{"listen bad port", dict(sym("argv"), str("x"), sym("listen"), p.Sequence{p.Rec("tcp", str("h"), p.Int(70000))}), ErrInvalidField},
		{"on-demand without listen", dict(sym("argv"), str("x"), sym("start"), sym("on-demand")), ErrInvalidField},
		{"start unknown", dict(sym("argv"), str("x"), sym("start"), sym("later")), ErrInvalidField},
		{"listen with notification-fd", dict(sym("argv"), str("x"), sym("listen"), p.Sequence{p.Rec("unix", str("/s"))}, sym("readiness"), p.Rec("notification-fd", p.Int(3))), ErrInvalidField},
		{"annotated bad restart", dict(sym("argv"), str("x"), sym("restart"), &p.Annotated{Pos: pos, Item: sym("sometimes")}), ErrInvalidField},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseSpec(tc.in)
			if s != nil || !errors.Is(err, tc.class) {
				t.Fatalf("ParseSpec = %v, %v; want class %v", s, err, tc.class)
			}
			var se *schema.ParseError
			if !errors.As(err, &se) {
				t.Fatalf("%T is not a *schema.ParseError", err)
			}
		})
	}
	_, err := ParseSpec(dict(sym("argv"), str("x"), sym("restart"), &p.Annotated{Pos: pos, Item: sym("sometimes")}))
	var se *schema.ParseError
	if !errors.As(err, &se) || se.Pos != pos || err.Error()[:len("etc/d.pr:3:9: ")] != "etc/d.pr:3:9: " {
		t.Errorf("error %q does not carry the position of the bad value", err)
	}
}

// A schedule: five cron fields or a descriptor, in the spec's TZ.
func TestParseSpecSchedule(t *testing.T) {
	for _, text := range []string{"0 3 * * *", "@hourly", "@daily", "@every 90s", "TZ=UTC */5 * * * *"} {
		s, err := ParseSpec(dict(sym("argv"), str("x"), sym("schedule"), str(text), sym("catchUp"), p.Bool(true)))
		if err != nil || s.Schedule == nil || s.Schedule.Text != text || !s.Schedule.CatchUp {
			t.Fatalf("%s: ParseSpec = %+v, %v", text, s, err)
		}
	}
	s, err := ParseSpec(dict(sym("argv"), str("x"), sym("schedule"), str("0 3 * * *"), sym("env"), dict(sym("TZ"), str("Asia/Tokyo"))))
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	if got := s.Schedule.Cron.Next(from).UTC(); !got.Equal(time.Date(2026, 6, 1, 18, 0, 0, 0, time.UTC)) {
		t.Errorf("03:00 in Tokyo is %v", got)
	}
}

// listen and start: on-demand.
func TestParseSpecListen(t *testing.T) {
	s, err := ParseSpec(dict(sym("argv"), str("x"), sym("start"), sym("on-demand"),
		sym("listen"), p.Sequence{p.Rec("tcp", str("127.0.0.1"), p.Int(8080)), p.Rec("unix", str("/run/x.sock"))}))
	if err != nil || len(s.Listen) != 2 || !s.OnDemand || s.Listen[0].String() != "127.0.0.1:8080" || s.Listen[1].String() != "unix:/run/x.sock" {
		t.Fatalf("ParseSpec = %+v, %v", s, err)
	}
}

func TestDecideTable(t *testing.T) {
	parallel(t)
	ok, fail, sig, spawn := Exit{}, Exit{Code: 1}, Exit{Signal: 9}, Exit{SpawnErr: errors.New("nope")}
	tests := []struct {
		p    RestartPolicy
		e    Exit
		want Next
	}{
		{RestartAlways, ok, Next{ActRestart, 200 * time.Millisecond}},
		{RestartAlways, fail, Next{ActRestart, time.Second}},
		{RestartAlways, spawn, Next{ActRestart, time.Second}},
		{RestartOnError, ok, Next{Action: ActComplete}},
		{RestartOnError, sig, Next{ActRestart, time.Second}},
		{RestartAll, ok, Next{Action: ActComplete}},
		{RestartAll, fail, Next{Action: ActCrash}},
		{RestartNever, ok, Next{Action: ActComplete}},
		{RestartNever, fail, Next{Action: ActComplete}},
	}
	for _, tc := range tests {
		if got := Decide(tc.p, tc.e); got != tc.want {
			t.Errorf("Decide(%v, %v) = %+v, want %+v", tc.p, tc.e, got, tc.want)
		}
	}
}

// FuzzParseSpec builds values from the fuzz input with a tiny stack
// machine (the Preserves codecs are another package's concern) and checks
// ParseSpec never panics and always returns exactly one of spec or a
// classified *schema.ParseError.
func FuzzParseSpec(f *testing.F) {
	f.Add([]byte{0, 5, 3})
	f.Add([]byte{1, 'a', 8, 0, 'x', 9, 1})
	f.Add([]byte("\x02argv\x00ls\x06\x02dir\x00/\x06"))
	f.Fuzz(func(t *testing.T, data []byte) {
		v := buildValue(data)
		s, err := ParseSpec(v)
		if (s == nil) == (err == nil) {
			t.Fatalf("ParseSpec(%v) = %v, %v", v, s, err)
		}
		if err != nil && !errors.Is(err, ErrNotASpec) && !errors.Is(err, ErrInvalidField) && !errors.Is(err, ErrRestrictingKey) {
			t.Fatalf("unclassified error %v", err)
		}
		if s != nil && len(s.Argv) == 0 {
			t.Fatal("spec without argv")
		}
	})
}

// buildValue interprets data as stack operations: opcode%10 selects
// push-string, push-symbol, push-int, push-bool, make-seq, make-dict,
// make-record, annotate, push-known-symbol, push-double.
func buildValue(data []byte) p.Value {
	var st []p.Value
	pop := func() p.Value {
		if len(st) == 0 {
			return p.Bool(false)
		}
		v := st[len(st)-1]
		st = st[:len(st)-1]
		return v
	}
	known := []string{"argv", "dir", "env", "clearEnv", "readyOnStart", "restart", "protocol",
		"one-shot", "always", "on-error", "all", "never", "none", "application/syndicate", "stopTimeout",
		"user", "group", "groups", "umask", "limits", "cgroup", "noNewPrivileges", "capabilities", "envFile",
		"nofile", "memoryMax", "cpuMax", "CAP_KILL", "usr"}
	text := func(i *int) string {
		start := *i
		for *i < len(data) && data[*i] >= ' ' {
			*i++
		}
		return string(data[start:*i])
	}
	for i := 0; i < len(data); i++ {
		op := data[i] % 10
		i++
		switch op {
		case 0:
			st = append(st, p.String(text(&i)))
		case 1:
			st = append(st, p.Symbol(text(&i)))
		case 2:
			if i < len(data) {
				st = append(st, p.Symbol(known[int(data[i])%len(known)]))
			}
		case 3:
			if i < len(data) {
				st = append(st, p.Int(int8(data[i])))
			}
		case 4:
			st = append(st, p.Bool(i < len(data) && data[i]&1 == 1))
		case 5, 8:
			n := 0
			if i < len(data) {
				n = int(data[i] % 4)
			}
			seq := make(p.Sequence, n)
			for j := n - 1; j >= 0; j-- {
				seq[j] = pop()
			}
			st = append(st, seq)
		case 6:
			val, key := pop(), pop()
			d := pop()
			if dd, ok := d.(*p.Dictionary); ok {
				es := append(append([]p.DictEntry(nil), dd.Entries()...), p.DictEntry{Key: key, Value: val})
				st = append(st, p.NewDictionary(es...))
			} else {
				st = append(st, d, p.NewDictionary(p.DictEntry{Key: key, Value: val}))
			}
		case 7:
			f := pop()
			st = append(st, p.NewRecord(pop(), f))
		case 9:
			st = append(st, &p.Annotated{Pos: p.Pos{Line: 1, Col: i}, Item: p.Unwrap(pop())})
		}
	}
	return pop()
}
