// Package schedule decides when a recipient may be messaged, in the
// recipient's own time zones: a campaign's weekly window of wall-clock
// hours, the zones a phone number may be in, a row's send_at cell, and the
// legal hours of the markets a number falls under.
//
// No function here reads the clock: each takes its instant as an
// argument. Every exported function and method is safe for concurrent use.
package schedule

// The zones are wall-clock rules, so the answers are only as right as the
// tz database they are read from. The embedded copy makes them the same on
// every machine (a CI container without /usr/share/zoneinfo, an operator's
// Windows laptop): time.LoadLocation prefers the system's files and falls
// back to this one.
import _ "time/tzdata"
