// Package cron owns meka's cron dialect: parsing five-field expressions and
// computing when they next fire in an IANA time zone.
//
// The dialect is Vixie cron as cronie and Vixie cron 4.1 implement it
// (entry.c, cron.c), with stricter validation:
//
//   - Exactly five fields: minute, hour, day of month, month, day of week.
//     Lists, ranges, steps on ranges and on "*" (10-40/15, */15), and
//     three-letter names (any case) in the month and day-of-week fields.
//     0 and 7 both mean Sunday. The lower-case descriptors @yearly,
//     @annually, @monthly, @weekly, @daily, @midnight and @hourly are
//     aliases for their five-field expansions.
//   - Day match: a day field is unrestricted exactly when its text begins
//     with "*" (Vixie's DOM_STAR/DOW_STAR flags), so "*/2" is unrestricted
//     and "1-31/2" is not. If either day field is unrestricted a day must
//     match both; if both are restricted, either suffices.
//   - Rejected, with a message saying why: any field count but five (six is
//     reported as an unsupported seconds field, never read as Quartz),
//     out-of-range values, backwards ranges, "N/step", step 0, a step larger
//     than its range spans, Quartz and cronie extensions (L W # ? ~ $),
//     @reboot, @every, and expressions that can never fire (0 0 30 2 *).
//
// Time zones follow the Vixie daemon's handling of clock changes. A job
// whose minute or hour field begins with "*" is a wildcard job: it fires at
// every real minute whose local wall time matches, so never inside a
// spring-forward gap and in both passes of a repeated hour. Any other job is
// a fixed-time job: it fires once, at the first real instant at which its
// wall time has been reached, so a time inside a gap fires at the first
// minute after the gap and a repeated hour does not fire again. Fires that
// land on the same instant are one fire.
//
// Next searches a whole 400-year Gregorian cycle, which bounds every
// possible expression: the longest wait is 40 years (0 0 29 2 */7 across
// the non-leap 2100). The package is pure: no clock, no I/O, and it imports
// nothing from meka.
package cron
