package main

import (
	"fmt"
	"io"
	"os"

	"github.com/syndicate-go/syndicate/script/format"
)

// runUpgrade is `syndicate fmt --upgrade [FILE…]`: each file's legacy `;`
// comments become `#` comments in place, and nothing else changes (no
// layout: run `fmt -w` afterwards for that). Without files it filters stdin
// to stdout. A file that would still not read is left untouched and
// reported with the place.
func runUpgrade(cl *cli, files []string) error {
	if len(files) == 0 {
		src, err := io.ReadAll(cl.stdin)
		if err != nil {
			return err
		}
		out, _, err := format.Upgrade("<stdin>", src)
		if err != nil {
			return err
		}
		_, err = cl.stdout.Write(out)
		return err
	}
	failed := false
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintf(cl.stderr, "syndicate: %v\n", err)
			failed = true
			continue
		}
		out, n, err := format.Upgrade(path, src)
		if err != nil {
			fmt.Fprintf(cl.stderr, "%v\n", err)
			failed = true
			continue
		}
		if n == 0 {
			continue
		}
		if err := writeFileAtomic(path, out); err != nil {
			fmt.Fprintf(cl.stderr, "syndicate: %v\n", err)
			failed = true
			continue
		}
		fmt.Fprintf(cl.stdout, "%s: %d comment(s) upgraded\n", path, n)
	}
	if failed {
		return exitStatus(1)
	}
	return nil
}
