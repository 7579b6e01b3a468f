package services

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/schemas/service"
	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
)

// Operator overrides (issue 24 item 5; `syndicate stop/start NAME`, like
// `systemctl stop/start` and `s6-svc -d/-u`). The overrides are held by
// the server, in the dependency tracker's actor, not by the client's
// connection, so they outlast it:
//
//   - the message `<stop-service NAME>` makes the server assert
//     `<service-stopped NAME SINCE>`, an obstacle of NAME's tracker
//     (deps.go): its `<run-service NAME>` goes, so NAME stops, and the
//     services depending on its state lose it and stop first (a daemon is
//     signalled only once its running dependents have stopped,
//     services/daemon/stop.go). They come back when NAME does.
//   - `<start-service NAME>` lifts the stop. When nothing requires NAME
//     (a declared daemon nobody asked for), the server also requires it,
//     and says so with `<service-started NAME SINCE>`, until the next stop
//     or server restart.
//   - Both show in `syndicate status` through `<service-info NAME …>`
//     (phase stopped, with when).
//
// With a state directory (`syndicate-server --state-dir DIR`) the stops
// are kept in DIR/overrides.pr, one `<service-stopped NAME SINCE>` per
// line, rewritten (write, fsync, rename) on every change and asserted
// again when the server starts: in the tracker's first turn, so a stopped
// daemon does not start for a moment after a restart.

// PhaseStopped is the phase of a service the operator stopped.
const PhaseStopped = preserves.Symbol("stopped")

// OverridesFile is the name of the overrides file in the state directory.
const OverridesFile = "overrides.pr"

// BootOptions tune BootWith. The zero value is Boot's.
type BootOptions struct {
	// StateDir, when set, keeps the operator's stops across restarts.
	StateDir string
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// DiagnosisGrace is how long a condition lasts before the diagnostics
	// report it; 0 means DiagnosisGrace.
	DiagnosisGrace time.Duration
}

// override is one stop or start the server holds.
type override struct {
	name    preserves.Value
	since   time.Time
	handles []dataspace.Handle
}

// overrides is the state of the overrides facet; the tracker's actor owns
// it.
type overrides struct {
	env      Env
	opts     BootOptions
	required map[string]int // key → require-service assertions, ours included
	stopped  map[string]*override
	started  map[string]*override
}

// bootOverrides asserts the stops kept in the state directory, then
// serves stop-service and start-service in the active facet.
func bootOverrides(t *dataspace.Turn, env Env, opts BootOptions) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	o := &overrides{env: env, opts: opts, required: map[string]int{},
		stopped: map[string]*override{}, started: map[string]*override{}}
	for _, s := range o.load() {
		since, err := time.Parse(time.RFC3339Nano, s.Since)
		if err != nil {
			since = opts.Now()
		}
		o.stop(t, s.ServiceName, since, false)
	}
	t.During(env.Config, pattern.Rec(service.LabelRequireService, pattern.Capture()), func(t *dataspace.Turn, caps []preserves.Value) error {
		k := overrideKey(caps[0])
		o.required[k]++
		t.OnStop(func(*dataspace.Turn) error { Count(o.required, k, -1); return nil })
		return nil
	})
	t.OnMessage(env.Config, pattern.Rec(syndicatego.LabelStopService, pattern.Capture()), func(t *dataspace.Turn, caps []preserves.Value) error {
		o.stop(t, preserves.Strip(caps[0]), opts.Now(), true)
		return nil
	})
	t.OnMessage(env.Config, pattern.Rec(syndicatego.LabelStartService, pattern.Capture()), func(t *dataspace.Turn, caps []preserves.Value) error {
		o.start(t, preserves.Strip(caps[0]))
		return nil
	})
}

func overrideKey(name preserves.Value) string { return preserves.FormatText(preserves.Strip(name)) }

// stop holds a stop of name (again: a second stop keeps the first one's
// time) and ends an operator's start of it.
func (o *overrides) stop(t *dataspace.Turn, name preserves.Value, since time.Time, save bool) {
	k := overrideKey(name)
	if s := o.started[k]; s != nil {
		o.release(t, s)
		delete(o.started, k)
	}
	if o.stopped[k] != nil {
		return
	}
	at := StatusTime(since)
	o.stopped[k] = &override{name: name, since: since, handles: []dataspace.Handle{
		t.Assert(o.env.Config, syndicatego.ServiceStopped{ServiceName: name, Since: at}.ToValue()),
		t.Assert(o.env.Config, ServiceInfo(name, Info{Phase: PhaseStopped, Since: since,
			Reasons: []string{"stopped by the operator at " + at + " (syndicate start lifts it)"}})),
	}}
	o.env.Logger.Info().Str("service", preserves.Show(name)).Msg("stopped by the operator")
	if save {
		o.save()
	}
}

// start lifts a stop of name, and requires name if nothing else does.
func (o *overrides) start(t *dataspace.Turn, name preserves.Value) {
	k := overrideKey(name)
	if s := o.stopped[k]; s != nil {
		o.release(t, s)
		delete(o.stopped, k)
		o.save()
	}
	if o.required[k] > 0 || o.started[k] != nil {
		o.env.Logger.Info().Str("service", preserves.Show(name)).Msg("started by the operator")
		return
	}
	now := o.opts.Now()
	at := StatusTime(now)
	o.started[k] = &override{name: name, since: now, handles: []dataspace.Handle{
		t.Assert(o.env.Config, RequireService(name)),
		t.Assert(o.env.Config, syndicatego.ServiceStarted{ServiceName: name, Since: at}.ToValue()),
		t.Assert(o.env.Config, ServiceInfo(name, Info{
			Reasons: []string{"started by the operator at " + at + "; nothing else requires it"}})),
	}}
	o.env.Logger.Info().Str("service", preserves.Show(name)).Msg("started by the operator; nothing else requires it")
}

func (o *overrides) release(t *dataspace.Turn, s *override) {
	for _, h := range s.handles {
		t.Retract(h)
	}
}

// load reads the stops kept in the state directory. A missing file is no
// stop; a damaged one is logged and its readable part kept.
func (o *overrides) load() []syndicatego.ServiceStopped {
	if o.opts.StateDir == "" {
		return nil
	}
	file := filepath.Join(o.opts.StateDir, OverridesFile)
	src, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		o.env.Logger.Error().Err(err).Str("file", file).Msg("cannot read the operator's stops; none are in force")
		return nil
	}
	vs, err := preserves.ReadAllText(src, preserves.TextOptions{})
	if err != nil {
		o.env.Logger.Error().Err(err).Str("file", file).Msg("operator's stops damaged; the readable ones are in force")
	}
	var out []syndicatego.ServiceStopped
	for _, v := range vs {
		s, err := syndicatego.ParseServiceStopped(v)
		if err != nil {
			o.env.Logger.Error().Err(err).Str("file", file).Msg("not a stop; ignored")
			continue
		}
		out = append(out, s)
	}
	return out
}

// save writes the stops into the state directory, atomically: a crash
// leaves the old file or the new one.
func (o *overrides) save() {
	if o.opts.StateDir == "" {
		return
	}
	keys := make([]string, 0, len(o.stopped))
	for k := range o.stopped {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b bytes.Buffer
	for _, k := range keys {
		s := o.stopped[k]
		b.WriteString(preserves.FormatText(syndicatego.ServiceStopped{ServiceName: s.name, Since: StatusTime(s.since)}.ToValue()))
		b.WriteByte('\n')
	}
	if err := writeAtomic(filepath.Join(o.opts.StateDir, OverridesFile), b.Bytes()); err != nil {
		o.env.Logger.Error().Err(err).Str("dir", o.opts.StateDir).Msg("cannot keep the operator's stops; they hold until the server stops")
	}
}

// writeAtomic replaces file with data: a temporary file beside it,
// synced, then renamed over it, and the directory synced.
func writeAtomic(file string, data []byte) error {
	dir := filepath.Dir(file)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(file)+".*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), file)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("writing %s: %w", file, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
