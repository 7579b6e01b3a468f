package cgroup

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// mount is one cgroup hierarchy as this process sees it.
type mount struct {
	point string          // where it is mounted
	root  string          // the cgroup at the mount point, within the hierarchy
	ctrl  map[string]bool // v1: the controllers bound to it
}

// placement is where the process is: per hierarchy, the directory of its
// own cgroup.
type placement struct {
	v2 string            // "" when there is no unified hierarchy
	v1 map[string]string // controller → directory
}

// discover reads the two proc files (their paths come from Options) and
// returns the process's own cgroup directories.
func discover(mountinfo, self string) (placement, error) {
	mounts, v2, err := readMounts(mountinfo)
	if err != nil {
		return placement{}, err
	}
	f, err := os.Open(self)
	if err != nil {
		return placement{}, err
	}
	defer f.Close()
	return place(f, mounts, v2)
}

// readMounts parses mountinfo (proc(5)): the v1 hierarchies and the first
// unified one.
func readMounts(name string) (v1 []mount, v2 *mount, err error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, s := range fields {
			if s == "-" {
				sep = i
				break
			}
		}
		if sep < 5 || sep+1 >= len(fields) {
			continue
		}
		fstype := fields[sep+1]
		m := mount{point: unescapeMount(fields[4]), root: unescapeMount(fields[3])}
		switch fstype {
		case "cgroup2":
			if v2 == nil {
				v2 = &m
			}
		case "cgroup":
			m.ctrl = map[string]bool{}
			if sep+3 < len(fields) {
				for _, o := range strings.Split(fields[sep+3], ",") {
					m.ctrl[o] = true
				}
			}
			v1 = append(v1, m)
		}
	}
	return v1, v2, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &c); err == nil {
				b.WriteByte(c)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// place reads /proc/self/cgroup (`ID:CONTROLLERS:PATH` lines) and maps each
// path into its mount.
func place(r io.Reader, v1 []mount, v2 *mount) (placement, error) {
	p := placement{v1: map[string]string{}}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			if v2 != nil {
				p.v2 = within(*v2, parts[2])
			}
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			for _, m := range v1 {
				if m.ctrl[c] {
					if dir := within(m, parts[2]); dir != "" {
						p.v1[c] = dir
					}
					break
				}
			}
		}
	}
	return p, sc.Err()
}

// within is the directory of cgroup cg in mount m, or "" when the mount
// does not show it (a bind mount of another part of the hierarchy).
func within(m mount, cg string) string {
	cg = path.Clean("/" + cg)
	root := path.Clean("/" + m.root)
	rel, ok := strings.CutPrefix(cg, root)
	if !ok || (rel != "" && root != "/" && !strings.HasPrefix(rel, "/")) {
		return ""
	}
	return filepath.Join(m.point, rel)
}
