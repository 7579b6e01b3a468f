package main

import (
	"errors"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/services/admin"
	"github.com/syndicate-go/syndicate/services/instance"
)

// lockInstance takes the locks of one server per configuration (issue 22;
// services/instance): each -c path and the admin socket, in the admin
// socket's runtime directory, before any script runs or process starts.
// A dry run takes none: editors and hooks run it beside a live server
// (--check never gets here). It returns nil and logs why when another
// server holds one.
func lockInstance(o *options, log zerolog.Logger) (*instance.Lock, bool) {
	if o.dryRun {
		return nil, true
	}
	var keys []instance.Key
	for _, c := range o.configs {
		keys = append(keys, instance.Key{What: "config", Prefix: "config", Path: c})
	}
	sock := o.adminSocket
	if sock == "" {
		sock = admin.DefaultPath()
	}
	if sock != "-" {
		keys = append(keys, instance.Key{What: "admin socket", Prefix: "admin", Path: sock})
	}
	if len(keys) == 0 {
		return nil, true
	}
	dir := filepath.Dir(admin.DefaultPath())
	l, err := instance.Acquire(dir, keys...)
	var held *instance.HeldError
	switch {
	case errors.As(err, &held):
		log.Error().Err(err).Int("holder", held.PID).Msg("refusing to start: one server per configuration")
		return nil, false
	case err != nil:
		// A runtime directory we cannot use must not keep PID 1 from
		// booting: run unlocked, and say so.
		log.Warn().Err(err).Str("dir", dir).Msg("cannot lock the configuration; running without the one-server check")
		return nil, true
	}
	for _, pid := range l.TakenOver {
		log.Info().Int("deadServer", pid).Msg("took over the lock of a server that is gone")
	}
	return l, true
}
