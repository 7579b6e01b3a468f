package format

import (
	"errors"
	"strings"
	"testing"

	"github.com/syndicate-go/syndicate/script"
)

func TestUpgradeLegacyComments(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		n              int
	}{
		{"leading", "; boot script\n<a>\n", "# boot script\n<a>\n", 1},
		{"no space, double", ";;no space\n<a>\n", "# no space\n<a>\n", 1},
		{"after a token", "<a x>; why\n<b>\n", "<a x> # why\n<b>\n", 1},
		{"ends a symbol", "[x;c\ny]\n", "[x # c\ny]\n", 1},
		{"empty", ";\n<a>\n", "#\n<a>\n", 1},
		{"at the end", "<a>\n; bye\n", "<a>\n# bye\n", 1},
		{"inside strings and the like", "<a \"x;y\" |p;q| #\"b;\" #x\"00\"> # c; d\n<b>\n",
			"<a \"x;y\" |p;q| #\"b;\" #x\"00\"> # c; d\n<b>\n", 0},
		{"layout kept", "  <a   1>   ;c\r\n\n\n<b\n 2>\n", "  <a   1>   # c\r\n\n\n<b\n 2>\n", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, n, err := Upgrade("t.pr", []byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want || n != tc.n {
				t.Errorf("Upgrade(%q) = %q, %d; want %q, %d", tc.in, got, n, tc.want, tc.n)
			}
			// Idempotent: nothing left to upgrade.
			if again, n, err := Upgrade("t.pr", got); err != nil || n != 0 || string(again) != string(got) {
				t.Errorf("second upgrade: %q, %d, %v", again, n, err)
			}
		})
	}
}

// fmt on a file with legacy comments says what they are and how to fix it.
func TestFormatNamesLegacyComments(t *testing.T) {
	_, err := Source("t.pr", []byte("<a>\n; old\n<b>\n"))
	if !errors.Is(err, script.ErrLegacyComment) || !strings.Contains(err.Error(), "t.pr:2:1: unexpected ';': ';' comments are legacy") {
		t.Fatalf("got %v", err)
	}
}

// A file that does not read even after the upgrade is reported, with the
// place, and not half-written.
func TestUpgradeReportsWhatStillFails(t *testing.T) {
	_, n, err := Upgrade("t.pr", []byte("; fine\n<a\n"))
	var e *script.Error
	if n != 1 || !errors.As(err, &e) || e.Pos.Line != 3 {
		t.Fatalf("n=%d err=%v", n, err)
	}
	_, _, err = Upgrade("t.pr", []byte("[x ; last\n]\n"))
	if !errors.As(err, &e) || e.Pos.Line != 2 || !strings.Contains(e.Msg, "must be moved by hand") {
		t.Fatalf("comment before a closer: %v", err)
	}
}
