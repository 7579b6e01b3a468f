package externalservices

// The keys of the dictionary form that restrict a daemon (issue 24):
// user, group, groups, umask, limits, cgroup, noNewPrivileges,
// capabilities, and envFile beside them. Their shapes are syndicateGo.prs's
// (UserField, LimitsField, …); what a schema cannot say is checked here:
// umask digits, rlimit and capability names, number ranges, and the
// cgroup's sub-keys.
//
// Failing closed: a key of the dictionary form that is unknown but close
// to a restricting key (usr, grup, limit, cgroups), an unknown rlimit
// name (limits: {nofiles: …}) or an unknown cgroup sub-key is a problem of
// class ErrRestrictingKey, not the warning an unknown key is: the daemon
// service does not run the spec (the daemon is failed, with the "did you
// mean"), and `--check` reports an error. An unknown user or group is of
// class ErrUnknownIdentity, which only `--check` reports (a warning: an
// earlier one-shot may create it); at run time the exec helper's lookup
// makes it a cannot-start reason.

import (
	"errors"
	"math"
	"math/big"
	"os/user"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	sg "github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/schema"
)

// Classes of the problems of restricting keys (test with errors.Is).
var (
	ErrRestrictingKey  = errors.New("daemon: a misspelt key would lift a restriction")
	ErrUnknownIdentity = errors.New("daemon: no such user or group")
)

// restrictingKeys are the keys whose misspelling fails closed.
var restrictingKeys = []string{"user", "group", "groups", "umask", "limits", "cgroup", "noNewPrivileges", "capabilities"}

// ExecControls are what the exec helper applies before the daemon's
// first instruction (services/daemon/exechelper). The zero value is none.
type ExecControls struct {
	User      string   // a name or a decimal id; "" keeps the server's
	Group     string   // a name or a decimal id; "" is the user's group
	Groups    []string // supplementary groups, if HasGroups
	HasGroups bool     // else the user's, from the group database
	Umask     uint32   // if HasUmask
	HasUmask  bool
	Limits    []Rlimit
	// NoNewPrivileges sets no_new_privs: setuid binaries and file
	// capabilities grant nothing to the daemon.
	NoNewPrivileges bool
	// Capabilities, if HasCapabilities, are kept: as ambient
	// capabilities for a daemon running as another user, as the bounding
	// set (with those) for a root daemon.
	Capabilities    []Capability
	HasCapabilities bool
}

// IsZero reports whether no control is set: such a daemon needs no helper.
func (x *ExecControls) IsZero() bool {
	return x.User == "" && x.Group == "" && !x.HasGroups && !x.HasUmask && len(x.Limits) == 0 &&
		!x.NoNewPrivileges && !x.HasCapabilities
}

// RlimInfinity is an unlimited rlimit bound (#f).
const RlimInfinity = math.MaxUint64

// Rlimit is one entry of `limits`.
type Rlimit struct {
	Name       string // as prlimit names it: nofile, nproc, …
	Resource   int    // RLIMIT_…
	Soft, Hard uint64 // RlimInfinity for #f
}

// RlimitResources are the `limits` names, as prlimit(1) has them.
var RlimitResources = map[string]int{
	"as": unix.RLIMIT_AS, "core": unix.RLIMIT_CORE, "cpu": unix.RLIMIT_CPU, "data": unix.RLIMIT_DATA,
	"fsize": unix.RLIMIT_FSIZE, "locks": unix.RLIMIT_LOCKS, "memlock": unix.RLIMIT_MEMLOCK,
	"msgqueue": unix.RLIMIT_MSGQUEUE, "nice": unix.RLIMIT_NICE, "nofile": unix.RLIMIT_NOFILE,
	"nproc": unix.RLIMIT_NPROC, "rss": unix.RLIMIT_RSS, "rtprio": unix.RLIMIT_RTPRIO,
	"rttime": unix.RLIMIT_RTTIME, "sigpending": unix.RLIMIT_SIGPENDING, "stack": unix.RLIMIT_STACK,
}

// Capability is one entry of `capabilities`.
type Capability struct {
	Name   string // CAP_…
	Number int
}

// Capabilities are the capability names (capabilities(7)) and numbers.
var Capabilities = func() map[string]int {
	m := make(map[string]int, len(capabilityNames))
	for n, name := range capabilityNames {
		m[name] = n
	}
	return m
}()

// capabilityNames are the capabilities in number order: a capability's
// number is its index, as in linux/capability.h (kernel ABI; the last is
// unix.CAP_LAST_CAP).
var capabilityNames = strings.Fields(`
	CAP_CHOWN CAP_DAC_OVERRIDE CAP_DAC_READ_SEARCH CAP_FOWNER CAP_FSETID
	CAP_KILL CAP_SETGID CAP_SETUID CAP_SETPCAP CAP_LINUX_IMMUTABLE
	CAP_NET_BIND_SERVICE CAP_NET_BROADCAST CAP_NET_ADMIN CAP_NET_RAW
	CAP_IPC_LOCK CAP_IPC_OWNER CAP_SYS_MODULE CAP_SYS_RAWIO CAP_SYS_CHROOT
	CAP_SYS_PTRACE CAP_SYS_PACCT CAP_SYS_ADMIN CAP_SYS_BOOT CAP_SYS_NICE
	CAP_SYS_RESOURCE CAP_SYS_TIME CAP_SYS_TTY_CONFIG CAP_MKNOD CAP_LEASE
	CAP_AUDIT_WRITE CAP_AUDIT_CONTROL CAP_SETFCAP CAP_MAC_OVERRIDE
	CAP_MAC_ADMIN CAP_SYSLOG CAP_WAKE_ALARM CAP_BLOCK_SUSPEND CAP_AUDIT_READ
	CAP_PERFMON CAP_BPF CAP_CHECKPOINT_RESTORE`)

// CgroupLimits are the `cgroup` keys; the zero value of a field is "not
// set". Its fields are those of services/daemon/cgroup.Limits, which
// converts from it.
type CgroupLimits struct {
	MemoryMax int64   // bytes
	PidsMax   int64   // tasks
	CPUMax    float64 // a fraction of one CPU
	CPUWeight int64   // 1…10000
}

// EnvFile is one entry of `envFile`.
type EnvFile struct {
	Path     string
	Optional bool // written with a leading `-`: a missing file is fine
}

var cgroupKeys = []string{"memoryMax", "pidsMax", "cpuMax", "cpuWeight"}

// restricting elaborates the restricting keys and envFile.
func (e *elaboration) restricting(v preserves.Value) {
	x := &e.s.Exec
	if f, ok := field[sg.UserFieldPresent](e, v, "user", sg.ParseUserField, mustBe("user must be a user name or a number")); ok {
		x.User = e.posixID("user", f.User)
	}
	if f, ok := field[sg.GroupFieldPresent](e, v, "group", sg.ParseGroupField, mustBe("group must be a group name or a number")); ok {
		x.Group = e.posixID("group", f.Group)
	}
	if f, ok := field[sg.GroupsFieldPresent](e, v, "groups", sg.ParseGroupsField, mustBe("groups must be a sequence of group names or numbers")); ok {
		x.HasGroups = true
		for _, g := range f.Groups {
			x.Groups = append(x.Groups, e.posixID("groups", g))
		}
	}
	if f, ok := field[sg.UmaskFieldPresent](e, v, "umask", sg.ParseUmaskField, mustBe(`umask must be a string of octal digits, like "027"`)); ok {
		e.umask(f.Umask)
	}
	if f, ok := field[sg.NoNewPrivilegesFieldPresent](e, v, "noNewPrivileges", sg.ParseNoNewPrivilegesField, mustBe("noNewPrivileges must be #t or #f")); ok {
		x.NoNewPrivileges = f.NoNewPrivileges
	}
	if f, ok := field[sg.CapabilitiesFieldPresent](e, v, "capabilities", sg.ParseCapabilitiesField, mustBe("capabilities must be a sequence of capability names, like [CAP_NET_BIND_SERVICE]")); ok {
		e.capabilities(f.Capabilities)
	}
	if f, ok := field[sg.LimitsFieldPresent](e, v, "limits", sg.ParseLimitsField, mustBe("limits must be a dictionary of rlimits, like {nofile: 1024}")); ok {
		e.rlimits(f.Limits)
	}
	if _, ok := field[sg.CgroupFieldPresent](e, v, "cgroup", sg.ParseCgroupField, mustBe("cgroup must be a dictionary, like {memoryMax: 100000000}")); ok {
		e.cgroup()
	}
	if f, ok := field[sg.EnvFileFieldPresent](e, v, "envFile", sg.ParseEnvFileField, mustBe("envFile must be a path or a sequence of paths")); ok {
		e.envFiles(f.EnvFile)
	}
}

// posixID elaborates a user or group of key; a name that does not exist
// here and now is a problem of class ErrUnknownIdentity.
func (e *elaboration) posixID(key string, id sg.PosixId) string {
	switch id := id.(type) {
	case sg.PosixIdId:
		if id.Value == nil || id.Value.Sign() < 0 || !id.Value.IsInt64() || id.Value.Int64() > math.MaxUint32-1 {
			e.invalid(e.keyPos(key), "%s: %v is not a valid id", key, id.Value)
			return ""
		}
		return id.Value.String()
	case sg.PosixIdName:
		if id.Value == "" {
			e.invalid(e.keyPos(key), "%s: an empty name", key)
			return ""
		}
		var err error
		if key == "user" {
			_, err = user.Lookup(id.Value)
		} else {
			_, err = user.LookupGroup(id.Value)
		}
		if err != nil {
			e.fail(ErrUnknownIdentity, e.keyPos(key), "%s: %s does not exist here (yet): the daemon cannot start without it", key, preserves.ShowString(id.Value))
		}
		return id.Value
	}
	return ""
}

// umask elaborates the umask string.
func (e *elaboration) umask(s string) {
	if x, _ := e.get("umask"); schema.IsWildcard(x) {
		return
	}
	n, err := strconv.ParseUint(s, 8, 32)
	if err != nil || s == "" || n > 0o777 {
		e.invalid(e.keyPos("umask"), `umask must be a string of octal digits up to "777", like "027", not %s`, preserves.ShowString(s))
		return
	}
	e.s.Exec.Umask, e.s.Exec.HasUmask = uint32(n), true
}

// capabilities elaborates the capability names: CAP_NET_BIND_SERVICE,
// or net_bind_service, as systemd and capsh write them.
func (e *elaboration) capabilities(names []sg.CapabilityName) {
	x := &e.s.Exec
	x.HasCapabilities = true
	known := sortedKeys(Capabilities)
	for _, n := range names {
		var s string
		switch n := n.(type) {
		case sg.CapabilityNameSymbol:
			s = string(n.Value)
		case sg.CapabilityNameString:
			s = n.Value
		}
		name := strings.ToUpper(s)
		if !strings.HasPrefix(name, "CAP_") {
			name = "CAP_" + name
		}
		num, ok := Capabilities[name]
		if !ok {
			e.fail(ErrRestrictingKey, e.keyPos("capabilities"), "capabilities: unknown capability %s%s", s, schema.DidYouMean(name, known))
			continue
		}
		if !slices.ContainsFunc(x.Capabilities, func(c Capability) bool { return c.Number == num }) {
			x.Capabilities = append(x.Capabilities, Capability{Name: name, Number: num})
		}
	}
}

// rlimits elaborates the limits dictionary.
func (e *elaboration) rlimits(m map[preserves.Symbol]sg.RlimitValue) {
	x, _ := e.get("limits")
	d, _ := schema.AsDict(x)
	at := e.keyPos("limits")
	names := sortedKeys(RlimitResources)
	for i, en := range d.Entries() {
		k, _ := preserves.Unwrap(en.Key).(preserves.Symbol)
		res, ok := RlimitResources[string(k)]
		if !ok {
			e.fail(ErrRestrictingKey, in(d, 2*i, at), "limits: unknown rlimit %s%s (prlimit's names: %s)", preserves.ShowString(string(k)),
				schema.DidYouMean(string(k), names), strings.Join(names, ", "))
			continue
		}
		if schema.IsWildcard(en.Value) {
			continue
		}
		l := Rlimit{Name: string(k), Resource: res}
		var good bool
		switch val := m[k].(type) {
		case sg.RlimitValueSame:
			l.Soft, good = bound(val.Value)
			l.Hard = l.Soft
		case sg.RlimitValuePair:
			var g2 bool
			l.Soft, good = bound(val.Soft)
			l.Hard, g2 = bound(val.Hard)
			good = good && g2 && l.Soft <= l.Hard
		}
		if !good {
			e.invalid(in(d, 2*i+1, at), "limits: %s must be a number, #f (unlimited) or [SOFT HARD] with SOFT <= HARD, not %s", k, schema.Show(en.Value))
			continue
		}
		e.s.Exec.Limits = append(e.s.Exec.Limits, l)
	}
}

func sortedKeys(m map[string]int) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// bound reads one rlimit bound.
func bound(b sg.RlimitBound) (uint64, bool) {
	switch b := b.(type) {
	case sg.RlimitBoundUnlimited:
		return RlimInfinity, true
	case sg.RlimitBoundN:
		if b.Value == nil || b.Value.Sign() < 0 || !b.Value.IsUint64() {
			return 0, false
		}
		return b.Value.Uint64(), true
	}
	return 0, false
}

// cgroup elaborates the cgroup dictionary; an unknown sub-key fails
// closed.
func (e *elaboration) cgroup() {
	x, _ := e.get("cgroup")
	d, _ := schema.AsDict(x)
	at := e.keyPos("cgroup")
	for i, en := range d.Entries() {
		k, _ := preserves.Unwrap(en.Key).(preserves.Symbol)
		if !slices.Contains(cgroupKeys, string(k)) {
			e.fail(ErrRestrictingKey, in(d, 2*i, at), "cgroup: unknown key %s%s (the keys are %s)", schema.Show(en.Key),
				schema.DidYouMean(string(k), cgroupKeys), strings.Join(cgroupKeys, ", "))
		}
	}
	c := &e.s.Cgroup
	positive := func(key string, n *big.Int, lo, hi int64, dst *int64) {
		v, _ := d.Get(preserves.Symbol(key))
		if schema.IsWildcard(v) {
			return
		}
		if n == nil || !n.IsInt64() || n.Int64() < lo || n.Int64() > hi {
			e.invalid(in(d, entryIndex(d, key), at), "cgroup: %s must be an integer from %d to %d, not %s", key, lo, hi, schema.Show(v))
			return
		}
		*dst = n.Int64()
	}
	invalid := func(key, what string) func(preserves.Value) string {
		return func(v preserves.Value) string {
			return "cgroup: " + key + " must be " + what + ", not " + schema.Show(v)
		}
	}
	sub := &elaboration{d: d, top: at}
	if f, ok := field[sg.MemoryMaxFieldPresent](sub, x, "memoryMax", sg.ParseMemoryMaxField, invalid("memoryMax", "a number of bytes")); ok {
		positive("memoryMax", f.MemoryMax, 1, math.MaxInt64, &c.MemoryMax)
	}
	if f, ok := field[sg.PidsMaxFieldPresent](sub, x, "pidsMax", sg.ParsePidsMaxField, invalid("pidsMax", "a number of tasks")); ok {
		positive("pidsMax", f.PidsMax, 1, math.MaxInt64, &c.PidsMax)
	}
	if f, ok := field[sg.CpuWeightFieldPresent](sub, x, "cpuWeight", sg.ParseCpuWeightField, invalid("cpuWeight", "an integer from 1 to 10000")); ok {
		positive("cpuWeight", f.CpuWeight, 1, 10000, &c.CPUWeight)
	}
	if f, ok := field[sg.CpuMaxFieldPresent](sub, x, "cpuMax", sg.ParseCpuMaxField, invalid("cpuMax", "a fraction of one CPU, like 0.5")); ok {
		var f64 float64
		switch n := f.CpuMax.(type) {
		case sg.SecondsInt:
			f64, _ = new(big.Float).SetInt(n.Value).Float64()
		case sg.SecondsDouble:
			f64 = n.Value
		}
		if v, _ := d.Get(preserves.Symbol("cpuMax")); !schema.IsWildcard(v) {
			if math.IsNaN(f64) || f64 <= 0 || f64 > 1<<20 {
				e.invalid(in(d, entryIndex(d, "cpuMax"), at), "cgroup: cpuMax must be a positive fraction of one CPU, like 0.5, not %s", schema.Show(v))
			} else {
				c.CPUMax = f64
			}
		}
	}
	e.problems = append(e.problems, sub.problems...)
}

// entryIndex is the item number (preserves.ItemPos numbering) of key's
// value in d, or -1.
func entryIndex(d *preserves.Dictionary, key string) int {
	for i, en := range d.Entries() {
		if preserves.Equal(en.Key, preserves.Symbol(key)) {
			return 2*i + 1
		}
	}
	return -1
}

// envFiles elaborates envFile.
func (e *elaboration) envFiles(f sg.EnvFiles) {
	var paths []string
	switch f := f.(type) {
	case sg.EnvFilesOne:
		paths = []string{f.Value}
	case sg.EnvFilesMany:
		paths = f.Value
	}
	for _, p := range paths {
		ef := EnvFile{Path: p}
		if rest, ok := strings.CutPrefix(p, "-"); ok {
			ef = EnvFile{Path: rest, Optional: true}
		}
		if ef.Path == "" {
			e.invalid(e.keyPos("envFile"), "envFile: an empty path")
			continue
		}
		e.s.EnvFiles = append(e.s.EnvFiles, ef)
	}
}
