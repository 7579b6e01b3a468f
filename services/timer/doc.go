// Package timer is the timer driver: it serves the Syndicate timer
// protocol (timer.prs) in the config dataspace, always, and in any
// dataspace DS while `<require-service <timer-driver #:DS>>` stands
// (docs/services.md, "Time").
//
//   - `<later-than SECONDS>` (Unix epoch, wall clock) is asserted for the
//     observers of that exact record once the wall clock has passed
//     SECONDS, at once if it already has, and retracted when its last
//     observer goes. Observers that capture the time (`<later-than ?t>`)
//     are not served: there is no deadline to wait for.
//   - `<periodic-tick SECONDS>` messages are sent every SECONDS on the
//     monotonic clock while somebody observes them, one stream per
//     interval however many observers it has. A stall drops the missed
//     ticks instead of bunching them.
//   - `<set-timer LABEL SECONDS KIND>`: `relative` (monotonic clock),
//     `absolute` (Unix epoch, wall clock) or `clear`; a new timer of a
//     label replaces its pending one. At expiry the driver sends
//     `<timer-expired LABEL NOW>`, NOW being the wall-clock Unix time (a
//     double) at which it fired; a cleared timer sends nothing.
//
// Integer forms: the schema's fields are doubles, and Preserves never
// makes 1 equal 1.0, so `? <later-than 1700000000>` would otherwise wait
// forever. The driver answers in the form it was asked: it asserts
// `<later-than 1700000000>` and sends `<periodic-tick 1>` to observers of
// those, and takes an integer SECONDS in set-timer. timer-expired always
// carries a double.
//
// Clocks: relative timers and ticks follow the monotonic clock, so a
// wall-clock step (NTP at boot) neither fires nor delays them; deadlines
// on the wall clock (later-than, absolute timers) are re-read at least
// every WallRecheck, since Go's timers only follow the monotonic clock.
// The Clock is injected, and the tests step the two clocks separately.
//
// Design: a driver belongs to the actor whose facet runs Serve; its
// turns own all the state (the two deadline heaps, the observers per
// value, the set-timers per label). One waiter goroutine, linked to the
// facet, sleeps until the earliest deadline the actor last announced
// (driver.arm) and then runs driver.fire as a turn of that actor. Bounds
// (the server may be PID 1): periodic ticks of less than MinInterval are
// refused, and at most MaxTimers set-timers are pending per driver.
package timer
