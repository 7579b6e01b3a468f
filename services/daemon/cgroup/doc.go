// Package cgroup gives each daemon a control group of its own, so that
// stopping a daemon stops everything it started (a grandchild that called
// setsid included) and its memory, task, and CPU limits hold for the whole
// tree (issue 24 item 3).
//
// # Layout
//
// [Open] finds the server's own cgroup in every hierarchy it needs
// (/proc/self/mountinfo and /proc/self/cgroup) and makes one instance
// directory under it, `syndicate.PID`, so that several servers sharing a
// cgroup (the end-to-end tests run many) never meet. Each run of a daemon
// gets `daemon-NAME+N` below it ([Manager.New]); NAME is the daemon's name with
// every byte outside [A-Za-z0-9_.@-] written %XX, so that no daemon name
// can be a cgroup interface file or climb out of the directory. Open
// removes the empty directories of servers that died without closing.
//
// # cgroup v2 and v1
//
// The unified (v2) hierarchy is the target. A process joins its daemon's
// v2 cgroup at fork ([Group.SysProcAttr]: clone3 with CLONE_INTO_CGROUP),
// so there is no moment at which it runs outside it. [Group.Kill] writes
// `cgroup.kill`, which SIGKILLs every process of the group atomically,
// wherever its session or process group is.
//
// v2 forbids processes in a cgroup that hands controllers to its children
// ("no internal processes"). So before it enables a controller for the
// daemons (memory, pids, cpu: `+memory` in `cgroup.subtree_control` of
// its own cgroup and of the instance directory), the server moves itself
// into a leaf, `syndicate.PID/server` ([Options.MoveSelf]).
//
// Hybrid systems (these machines, and CI) mount a v2 hierarchy with no
// controllers beside v1 hierarchies that have them. There, a limit whose
// controller v2 lacks is applied through the v1 hierarchy of that
// controller: the daemon's directory is made there too and the process
// joins it before its first instruction through the exec helper
// ([Group.V1Procs]: a v1 cgroup cannot be joined at fork), or, started
// directly, right after the fork ([Group.Attach]). The daemon service
// uses the helper whenever the daemon has a cgroup limit, so only a
// daemon whose v1 directories merely count its figures runs its first
// instructions outside them.
//
// # What cannot be had is said, never dropped
//
// [Open] collects [Manager.Notes]: one line per missing piece (no v2
// hierarchy, not writable, a controller nowhere), which the server logs
// once. A limit that cannot be applied to a daemon is in
// [Group.Unapplied] as a *[LimitError], which the daemon's status shows
// as its reason. Without any usable hierarchy a [Group] has no
// directory ([Group.Confined] is false) and the caller keeps to process
// groups.
//
// # Concurrency
//
// A Manager is read-only after Open and may be shared. A Group belongs to
// the goroutine running its daemon's process, except that [Group.Stats],
// [Group.Signal] and [Group.Kill] only read and write cgroup files and may
// be called from anywhere.
package cgroup
