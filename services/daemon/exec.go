package daemon

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/syndicate-go/syndicate/services/daemon/exechelper"
)

// The spec's exec controls (user, group, groups, umask, limits,
// noNewPrivileges, capabilities) are put in force by the exec helper
// (package exechelper): the child is the server's own binary in helper
// mode, which applies them and execs the daemon. A spec without controls
// is started directly, as before, which costs no extra exec. envFile is
// read here, at every start.

// ErrEnvFileMissing: a required envFile does not exist (cannot start).
var ErrEnvFileMissing = errors.New("environment file not found")

// prepareSpec reads the spec's environment files into a copy of the spec
// and resolves its exec controls; either failing is a spawn failure.
func (p *process) prepareSpec() error {
	s := p.spec
	if len(s.EnvFiles) > 0 {
		env, err := readEnvFiles(s.EnvFiles)
		if err != nil {
			return &SpawnError{Err: err}
		}
		c := *s
		c.Env = append(append([]EnvChange(nil), s.Env...), env...)
		p.spec = &c
	}
	// Socket activation (LISTEN_FDS in the environment) needs the
	// helper too: LISTEN_PID is the daemon's pid, known only in it.
	if s.Exec.IsZero() && !setsEnv(p.spec, "LISTEN_FDS") {
		return nil
	}
	h, err := exechelper.Resolve(&s.Exec, s.Argv)
	if err != nil {
		return &SpawnError{Err: err}
	}
	p.helper = h
	return nil
}

// setsEnv reports whether s gives the daemon variable k.
func setsEnv(s *Spec, k string) bool {
	set := false
	for _, c := range s.Env {
		if c.Name == k {
			set = !c.Remove
		}
	}
	return set
}

// viaHelper makes p.cmd start the exec helper instead of the daemon, with
// the status pipe after the other inherited descriptors.
func (p *process) viaHelper(pipe func() (r, w *os.File, err error)) error {
	if p.helper == nil {
		return nil
	}
	r, w, err := pipe()
	if err != nil {
		return err
	}
	p.status, p.statusW = r, w
	p.helper.StatusFD = 3 + len(p.cmd.ExtraFiles)
	p.cmd.ExtraFiles = append(p.cmd.ExtraFiles, w)
	p.cmd.Path, p.cmd.Args, p.cmd.Err = exechelper.SelfPath, p.helper.Args(), nil
	if p.mon != nil && p.mon.sock != nil && p.helper.SetUID {
		// The daemon, as its user, must reach its notify socket.
		for _, f := range []string{p.mon.sock.dir, p.mon.sock.path} {
			if err := os.Chown(f, p.helper.UID, p.helper.GID); err != nil {
				return err
			}
		}
	}
	return nil
}

// awaitExec waits until the helper has exec'd the daemon (the status
// pipe closes empty) or failed (it says why, and exits).
func (p *process) awaitExec() error {
	if p.status == nil {
		return nil
	}
	p.statusW.Close()
	msg, _ := io.ReadAll(io.LimitReader(p.status, 4096))
	p.status.Close()
	if len(msg) == 0 {
		return nil
	}
	_ = p.cmd.Wait()
	children.remove(p.cmd.Process.Pid)
	err := exechelper.ParseStatus(msg)
	if strings.HasPrefix(err.Error(), "exec") || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return spawnCause(p.spec, err)
	}
	return &SpawnError{Err: err}
}

// readEnvFiles reads KEY=VALUE lines (blank lines and # comments
// skipped, a value may be quoted with ' or ") from each file in order.
func readEnvFiles(files []EnvFile) ([]EnvChange, error) {
	var env []EnvChange
	for _, f := range files {
		b, err := os.ReadFile(f.Path)
		switch {
		case err != nil && f.Optional && errors.Is(err, fs.ErrNotExist):
			continue
		case errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("%w: %s", ErrEnvFileMissing, f.Path)
		case err != nil:
			return nil, fmt.Errorf("envFile: %w", err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			if line == "" || line[0] == '#' || line[0] == ';' {
				continue
			}
			k, v, ok := strings.Cut(line, "=")
			k = strings.TrimSpace(strings.TrimPrefix(k, "export "))
			if !ok || k == "" || strings.ContainsAny(k, " \t") {
				return nil, fmt.Errorf("envFile %s:%d: expected KEY=VALUE", f.Path, n)
			}
			v = strings.TrimSpace(v)
			if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
				v = v[1 : len(v)-1]
			}
			env = append(env, EnvChange{Name: k, Value: v})
		}
	}
	return env, nil
}
