package exechelper

import (
	"errors"
	"io/fs"
	"slices"
	"syscall"
	"testing"

	"github.com/syndicate-go/syndicate/dataspace/schemas/externalservices"
)

// Resolve turns names into ids: the user's primary group and its
// groups from the database unless groups is given; a number without a
// passwd entry stands for itself; an unknown name is ErrUnknownIdentity.
func TestResolve(t *testing.T) {
	c, err := Resolve(&externalservices.ExecControls{User: "nobody", HasUmask: true, Umask: 0o27}, []string{"x"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.SetUID || c.UID != 65534 || !c.SetGID || c.GID != 65534 || !c.SetGroups || !slices.Contains(c.Groups, 65534) || c.Umask != 0o27 {
		t.Errorf("nobody: %+v", c)
	}
	c, err = Resolve(&externalservices.ExecControls{User: "4242", Group: "0", HasGroups: true, Groups: []string{"1", "2"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.UID != 4242 || c.GID != 0 || !slices.Equal(c.Groups, []int{1, 2}) || c.Umask != -1 {
		t.Errorf("numeric: %+v", c)
	}
	for _, x := range []externalservices.ExecControls{{User: "no-such-user-here"}, {Group: "no-such-group-here"}, {HasGroups: true, Groups: []string{"no-such-group-here"}}} {
		if _, err := Resolve(&x, nil); !errors.Is(err, ErrUnknownIdentity) {
			t.Errorf("%+v: %v", x, err)
		}
	}
}

// What the helper reports keeps its errno, so that the daemon service
// can explain a missing program as it does for a direct start.
func TestParseStatus(t *testing.T) {
	err := ParseStatus([]byte("2 exec /nope: no such file or directory"))
	if !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, syscall.ENOENT) || err.Error() != "exec /nope: no such file or directory" {
		t.Errorf("%v", err)
	}
	err = ParseStatus([]byte("0 setuid 5: something"))
	if errors.Unwrap(err) != nil || err.Error() != "setuid 5: something" {
		t.Errorf("%v", err)
	}
}
