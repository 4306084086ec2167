package config

import (
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// ScheduleSource starts a run on a timer: every interval, or at the times a
// cron expression names.
type ScheduleSource struct {
	// Every is the interval (the first run is at start); 0 when Cron is set.
	Every time.Duration
	// Cron is the expression as written, "" when Every is set.
	Cron string
	// Location is the time zone Cron is read in (time.Local by default).
	Location *time.Location
	sched    cron.Schedule
}

// Next is the first run time strictly after the given time. With Every it is
// after+Every; the engine anchors the first run at start. It returns the zero
// time for a cron expression that never fires again.
func (s *ScheduleSource) Next(after time.Time) time.Time {
	if s.sched == nil {
		return after.Add(s.Every)
	}
	return s.sched.Next(after.In(s.Location))
}

// cronParser takes the standard five fields (minute hour day-of-month month
// day-of-week) and descriptors such as @daily. Seconds are left out on
// purpose: a six-field expression means "with seconds" to some tools and
// "with a year" to others, and a schedule finer than a minute wants every:.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// readSchedule reads a schedule source's keys.
func readSchedule(o *obj) *ScheduleSource {
	s := &ScheduleSource{Location: time.Local}
	hasEvery, hasCron := o.has("every"), o.has("cron")
	switch {
	case hasEvery && hasCron:
		o.problem("cron", "set every or cron, not both")
	case !hasEvery && !hasCron:
		o.d.probs.addf(o.d.file, o.line, 0, o.field("every"), "a schedule source needs every (an interval such as 1h) or cron (such as \"0 2 * * *\")")
	}
	s.Every = o.duration("every", 0, time.Second)
	if t, ok := o.scalar("cron"); ok {
		expr := strings.TrimSpace(t.value)
		switch {
		case strings.HasPrefix(expr, "@every"):
			o.problem("cron", "for an interval use every: (such as every: 1h) instead of %s", t.shown)
		case strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ="):
			o.problem("cron", "set the time zone with timezone:, not inside the expression")
		default:
			sched, err := cronParser.Parse(expr)
			if err != nil {
				o.problem("cron", "want a cron expression of 5 fields (minute hour day month weekday) such as \"0 2 * * *\", or @daily, @hourly...: %v", err)
			} else {
				s.Cron, s.sched = expr, sched
			}
		}
	}
	if t, ok := o.scalar("timezone"); ok {
		loc, err := time.LoadLocation(t.value)
		switch {
		case t.value == "":
		case err != nil:
			o.problem("timezone", "unknown time zone %s: want an IANA name such as Europe/London, UTC or Local", t.shown)
		case !hasCron:
			o.problem("timezone", "timezone applies only to cron schedules")
		default:
			s.Location = loc
		}
	}
	if s.sched != nil {
		if spec, ok := s.sched.(*cron.SpecSchedule); ok {
			spec.Location = s.Location
		}
		if s.Next(time.Now()).IsZero() {
			o.problem("cron", "%q never fires", s.Cron)
		}
	}
	return s
}
