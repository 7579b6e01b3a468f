package externalservices

import (
	"strings"

	"github.com/robfig/cron/v3"

	sg "github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/schema"
)

// Schedule is a scheduled one-shot's `schedule` and `catchUp` keys
// (docs/services.md, "Scheduled one-shots"): the process runs once at each
// time of the schedule, never twice at once.
type Schedule struct {
	// Text is the schedule as written.
	Text string
	// Cron gives the next time after a given one. Its time zone is the
	// server's local one, or the TZ of the spec's env, or a `TZ=ZONE `
	// prefix of Text.
	Cron cron.Schedule
	// CatchUp: a run missed while the server was down runs once at
	// start-up (needs the server's --state-dir).
	CatchUp bool
}

// cronParser reads five fields (minute hour day-of-month month
// day-of-week) and the descriptors (@hourly, @daily, @every 90s, …).
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseSchedule parses a schedule, in the time zone tz ("" for the local
// one) unless it starts with its own `TZ=` or `CRON_TZ=`.
func ParseSchedule(text, tz string) (cron.Schedule, error) {
	if tz != "" && !strings.HasPrefix(text, "TZ=") && !strings.HasPrefix(text, "CRON_TZ=") {
		text = "TZ=" + tz + " " + text
	}
	return cronParser.Parse(text)
}

// schedule elaborates the schedule and catchUp keys; the spec's env must
// be elaborated first (its TZ is the schedule's zone).
func (e *elaboration) schedule(v preserves.Value) {
	f, ok := field[sg.ScheduleFieldPresent](e, v, "schedule", sg.ParseScheduleField, mustBe("schedule must be a string (a cron expression)"))
	c, hasCatchUp := field[sg.CatchUpFieldPresent](e, v, "catchUp", sg.ParseCatchUpField, mustBe("catchUp must be #t or #f"))
	if x, _ := e.get("schedule"); !ok || schema.IsWildcard(x) {
		if _, given := e.get("catchUp"); given && !ok {
			e.invalid(e.keyPos("catchUp"), "catchUp needs a schedule")
		}
		return
	}
	tz := ""
	for _, ch := range e.s.Env {
		if ch.Name == "TZ" {
			tz = ch.Value
			if ch.Remove {
				tz = ""
			}
		}
	}
	sched, err := ParseSchedule(f.Schedule, tz)
	if err != nil {
		e.invalid(e.keyPos("schedule"), "schedule %s: %v", preserves.ShowString(f.Schedule), err)
		return
	}
	e.s.Schedule = &Schedule{Text: f.Schedule, Cron: sched, CatchUp: hasCatchUp && c.CatchUp}
	for _, k := range []string{"readiness", "readyOnStart"} {
		if _, given := e.get(k); given {
			e.invalid(e.keyPos(k), "%s does not apply to a scheduled one-shot (it counts as ready once scheduled)", k)
		}
	}
}
