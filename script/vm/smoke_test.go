package vm_test

import "testing"

func TestSmoke(t *testing.T) {
	w := newWorld(t)
	w.run("<a 1> <b 2>", nil)
	w.wantContents("<a 1>", "<b 2>")
}
