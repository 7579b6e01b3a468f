package main

// ui: the live view in a browser (services/webui), bridged to the
// connection this command opens, with the status and analysis models of
// `status` and `analyze`, so the page and the text commands agree.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
	"github.com/syndicate-go/syndicate/services/admin/session"
	"github.com/syndicate-go/syndicate/services/admin/status"
	"github.com/syndicate-go/syndicate/services/timeline/analyze"
	"github.com/syndicate-go/syndicate/services/webui"
)

// uiOpts are the flags of ui.
type uiOpts struct {
	listen       string
	open, noOpen bool
}

func (cl *cli) ui(ctx context.Context, o uiOpts) error {
	if o.open && o.noOpen {
		return usagef("ui: --open and --no-open contradict each other")
	}
	sys := dataspace.NewSystem(dataspace.Options{})
	s, err := session.Open(ctx, sys, true, cl.conn)
	if err != nil {
		return err
	}
	defer s.Close()
	srv, err := webui.Listen(sys, s.Cfg, webui.Options{Listen: o.listen, Lost: s.Done(), Timeout: s.Timeout(),
		Logger: zerolog.Nop(), Engines: uiEngines()})
	if err != nil {
		return err
	}
	fmt.Fprintf(cl.stdout, "syndicate ui: %s\n", srv.URL())
	if o.open {
		if err := openBrowser(srv.URL()); err != nil {
			fmt.Fprintf(cl.stderr, "syndicate ui: could not open a browser: %v\n", err)
		}
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.Done():
			cancel()
		case <-sctx.Done():
		}
	}()
	if err := srv.Serve(sctx); err != nil {
		return err
	}
	if ctx.Err() == nil {
		return s.Err()
	}
	return nil
}

// openBrowser opens url through a file only the user can read that
// redirects to it: the token never appears on a command line, where other
// users could read it (as Jupyter does).
func openBrowser(url string) error {
	dir, err := os.MkdirTemp("", "syndicate-ui-")
	if err != nil {
		return err
	}
	page := filepath.Join(dir, "open.html")
	body := fmt.Sprintf("<!doctype html><meta http-equiv=\"refresh\" content=\"0;url=%s\"><a href=\"%s\">open the page</a>\n", url, url)
	if err := os.WriteFile(page, []byte(body), 0o600); err != nil {
		return err
	}
	return exec.Command("xdg-open", page).Start()
}

// uiEngines wires the page to the models of status and analyze.
func uiEngines() webui.Engines {
	return webui.Engines{
		Status: func(name preserves.Value) webui.StatusModel {
			var filter pattern.Pattern
			if name != nil {
				filter = services.Literal(name)
			}
			return uiStatus{status.NewModel(filter)}
		},
		Boot:    uiBoot,
		Pattern: parsePattern,
	}
}

// uiStatus is the status model as the page asks for it.
type uiStatus struct{ m *status.Model }

func (u uiStatus) Subscribe(t *dataspace.Turn, cfg *dataspace.Ref, changed func(*dataspace.Turn)) {
	u.m.Subscribe(t, cfg, changed)
}

// uiRow is a row of `status --json` with the name as the table shows it
// (capabilities as `#:ref`).
type uiRow struct {
	status.Service
	Display string `json:"display"`
}

func (u uiStatus) Services() any {
	rows := []uiRow{}
	for _, s := range u.m.Snapshot() {
		rows = append(rows, uiRow{s, preserves.FormatText(services.HideRefs(s.Value()))})
	}
	return rows
}

func (u uiStatus) Service(name preserves.Value) any {
	for _, s := range u.m.Snapshot() {
		if preserves.Equal(s.Value(), name) {
			u.m.Detail(&s)
			s.Output = nil // the page follows the log itself
			return uiRow{s, preserves.FormatText(services.HideRefs(s.Value()))}
		}
	}
	return nil
}

// uiBoot is the analysis of `analyze`, laid out as its pictures are.
func uiBoot(in webui.BootInput) (any, error) {
	var origins []preserves.Value
	if in.Origin != nil {
		origins = append(origins, in.Origin)
	}
	deps := make([][]preserves.Value, len(in.Deps))
	for i, d := range in.Deps {
		deps[i] = d[:]
	}
	b, err := analyze.FromValues(origins, in.Histories, deps, in.Now)
	if err != nil {
		return nil, fmt.Errorf("the server keeps %w: is it a syndicate-go server?", err)
	}
	return analyze.PictureOf(b), nil
}
