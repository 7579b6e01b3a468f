package main

import (
	"os"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/services/daemon/ledger"
	"github.com/syndicate-go/syndicate/services/instance"
)

// recoverLeftovers stops what a dead server of the same configuration
// left running (issue 22 item 5; services/daemon/ledger), before this one
// runs any script or process, and starts this server's own record beside
// its locks. The dead servers are those whose locks were taken over, and
// one that had this server's pid. Without a lock (a dry run, a runtime
// directory that cannot be used) there is no record.
func recoverLeftovers(lock *instance.Lock, log zerolog.Logger) (*ledger.Ledger, []ledger.Found) {
	if lock == nil {
		return nil, nil
	}
	dir := lock.Dir()
	found, err := ledger.Recover(dir, append(lock.TakenOver, os.Getpid()))
	if err != nil {
		log.Warn().Err(err).Str("dir", dir).Msg("reading the record of a dead server")
	}
	for _, f := range found {
		log.Warn().Int("deadServer", f.Server).Str("service", "<daemon "+f.Name+">").Int("pid", f.Pid).
			Strs("cgroup", cgroupDirs(f)).Str("how", f.How).Msg("a daemon left running by a dead server")
	}
	l, err := ledger.Create(dir)
	if err != nil {
		log.Warn().Err(err).Msg("no record of the daemons: a next server could not stop them if this one were killed")
		return nil, found
	}
	return l, found
}

func cgroupDirs(f ledger.Found) []string {
	var out []string
	for _, d := range f.Cgroup {
		out = append(out, filepath.Base(filepath.Dir(d))+"/"+filepath.Base(d))
	}
	return out
}
