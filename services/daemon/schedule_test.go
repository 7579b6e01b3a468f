package daemon

import (
	"testing"
	"time"

	rq "github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/dataspace/schemas/externalservices"
)

func mustSchedule(t *testing.T, text string) *plan {
	t.Helper()
	c, err := externalservices.ParseSchedule(text, "UTC")
	rq.NoError(t, err)
	p, _ := newPlan(c, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Time{}, false)
	return &p
}

// A run longer than the period skips the times that come while it runs,
// and counts them; the next run is the first time after its end.
func TestPlanSkipsTimesWhileRunning(t *testing.T) {
	p := mustSchedule(t, "@every 1s")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rq.Equal(t, t0.Add(time.Second), p.next)
	p.take() // the run at 1 s
	rq.Equal(t, t0.Add(2*time.Second), p.next)
	rq.Equal(t, 1, p.finished(t0.Add(2500*time.Millisecond)), "the time at 2 s came during the run")
	rq.Equal(t, t0.Add(3*time.Second), p.next)
	p.take()
	rq.Equal(t, 0, p.finished(t0.Add(3500*time.Millisecond)), "a short run skips nothing")
	rq.Equal(t, 1, p.skipped)
}

func TestPlanCronFields(t *testing.T) {
	p := mustSchedule(t, "30 3 * * *")
	rq.Equal(t, time.Date(2026, 1, 1, 3, 30, 0, 0, time.UTC), p.next)
	p.take()
	rq.Equal(t, time.Date(2026, 1, 2, 3, 30, 0, 0, time.UTC), p.next)
	rq.Equal(t, time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC), mustSchedule(t, "@hourly").next)
	rq.Equal(t, time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC), mustSchedule(t, "@daily").next)
	rq.Equal(t, time.Date(2026, 1, 1, 0, 1, 30, 0, time.UTC), mustSchedule(t, "@every 90s").next)
}

// catchUp: a time between the last run kept in the state directory and
// now was missed, so the first run is at once; without catchUp, or
// without a kept time, or with no time missed, it is not.
func TestPlanCatchUp(t *testing.T) {
	c, err := externalservices.ParseSchedule("0 3 * * *", "UTC")
	rq.NoError(t, err)
	now := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	yesterday := time.Date(2026, 1, 1, 3, 0, 0, 0, time.UTC)
	_, missed := newPlan(c, now, yesterday, true)
	rq.True(t, missed, "the run of 2026-01-02 03:00 was missed")
	_, missed = newPlan(c, now, yesterday, false)
	rq.False(t, missed, "without catchUp")
	_, missed = newPlan(c, now, time.Time{}, true)
	rq.False(t, missed, "nothing kept: nothing known to be missed")
	_, missed = newPlan(c, now, time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC), true)
	rq.False(t, missed, "the last run was today's")
}

// The time zone: the spec's env TZ, unless the schedule names its own.
func TestScheduleTimeZone(t *testing.T) {
	from := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	c, err := externalservices.ParseSchedule("0 3 * * *", "Asia/Tokyo") // UTC+9
	rq.NoError(t, err)
	rq.Equal(t, time.Date(2026, 6, 1, 18, 0, 0, 0, time.UTC), c.Next(from).UTC())
	c, err = externalservices.ParseSchedule("TZ=UTC 0 3 * * *", "Asia/Tokyo")
	rq.NoError(t, err)
	rq.Equal(t, time.Date(2026, 6, 1, 3, 0, 0, 0, time.UTC), c.Next(from).UTC())
	_, err = externalservices.ParseSchedule("0 3 * * *", "Nowhere/Atlantis")
	rq.Error(t, err)
}

// A schedule that never matches again (30 February) ends the plan
// instead of looping.
func TestPlanWithoutMoreTimes(t *testing.T) {
	p := mustSchedule(t, "0 0 30 2 *")
	rq.True(t, p.next.IsZero())
	p.take()
	rq.Zero(t, p.finished(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)))
}
