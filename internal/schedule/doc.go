// Package schedule owns scheduled jobs: turns the agent arranges for
// itself. A job pairs a schedule (an interval, a cron expression, or one
// instant) with a prompt, belongs to the session that created it, and
// fires as a turn of that session.
//
// It holds the rules and leaves the rest to small interfaces: a Store
// keeps the jobs (the SQLite one lives in internal/sqlite and the
// composition root adapts it), a Firer is the host that holds sessions
// and runs their turns. The package provides:
//
//   - the schedule_create, schedule_list and schedule_cancel tools and the
//     per-request [Scheduled] index of a session's jobs;
//   - gates: a command or a tool call run before the turn, with the
//     predicates that decide whether something happened, their stored
//     baselines, failures and the permission bar that withholds them;
//   - the sweep: due occurrences claimed by one conditional write each,
//     so hosts sharing a database run every occurrence once; missed runs
//     collapsed; one-shots dropped past their grace; batches bounded per
//     session; claims that never end parking the job.
//
// Time is injected (Options.Now) and Sweep takes the instant it sweeps
// at, so tests drive the scheduler without sleeping. It imports
// internal/schedule/cron, session, tool, permission, model and agent (the
// RequestContributor seam), nothing above them.
package schedule
