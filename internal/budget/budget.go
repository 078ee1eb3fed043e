// Package budget is the send budget of sender numbers shared by every
// bulksend process that sends from them, on any host: a book of send
// slots in a Redis server (a pace.Book). Each send books its slot with
// one round trip, a Lua script that runs atomically in the server, so
// processes booking at once never put more in any sliding second than the
// pacer's rules allow, and together reach it.
//
// The slots are counted on the server's clock (TIME), so that hosts whose
// clocks differ share one second. Per number the server keeps three keys,
// gone a minute after the last booking (a restart of the server loses
// only the bookings of the last second or so, and what processes shared):
//
//	PREFIX{FROM}    hash: parts booked so far, the next slot by the pace,
//	                the instant all of them stop counting, a shared limit
//	                and its version, a rest
//	PREFIX{FROM}:c  zset: each booking by the parts booked up to it
//	PREFIX{FROM}:r  zset: each booking by when its parts stop counting
//
// The braces keep a number's keys in one slot of a Redis Cluster.
package budget

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bulksend/bulksend/internal/pace"
)

// ErrUnavailable is a budget that cannot be reached (or refused a
// booking): sends must stop, never leave unbooked. Budget's errors wrap
// it (errors.Is).
var ErrUnavailable = errors.New("the shared budget cannot be reached")

// ErrTwoPasswords refuses a URL with a password when one is given apart.
var ErrTwoPasswords = errors.New("the budget URL has a password, and another is given")

// Error is a failure of the budget at URL (its password removed).
type Error struct {
	URL string
	Err error
}

func (e *Error) Error() string { return fmt.Sprintf("shared budget %s: %v", e.URL, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// Is makes every Error an ErrUnavailable.
func (e *Error) Is(target error) bool { return target == ErrUnavailable }

// ttl is how long a number's keys outlive its last booking.
const ttl = time.Minute

// Options say which Redis server holds the budget.
type Options struct {
	// URL is redis://[USER[:PASSWORD]@]HOST[:PORT][/DB], or rediss://…
	// for TLS.
	URL string
	// Password, if not "", is the password (the URL then has none): the
	// front end reads it from a file, as a password in a URL shows in ps
	// and shell history.
	Password string
	// Namespace keeps apart the budgets of sends that do not reach the
	// same API (a rehearsal against a sandbox); "" for the provider.
	Namespace string
}

// Budget is a shared budget, made by Open. It is safe for concurrent use.
type Budget struct {
	rdb    *redis.Client
	url    string // without its password
	prefix string
	// now, if not nil, gives the script its instants instead of the
	// server's TIME: tests with explicit times.
	now func() time.Time
}

var _ pace.Book = (*Budget)(nil)

// Parse checks o and returns the client options it names.
func Parse(o Options) (*redis.Options, error) {
	u, err := url.Parse(o.URL)
	if err != nil {
		return nil, fmt.Errorf("budget URL: %w", err)
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return nil, fmt.Errorf("budget URL %q: want redis://HOST:PORT/DB or rediss://… (TLS)", Redact(o.URL))
	}
	if u.Host == "" {
		return nil, fmt.Errorf("budget URL %q: no host", Redact(o.URL))
	}
	ro, err := redis.ParseURL(o.URL)
	if err != nil {
		return nil, fmt.Errorf("budget URL %q: %w", Redact(o.URL), err)
	}
	if o.Password != "" {
		if ro.Password != "" {
			return nil, ErrTwoPasswords
		}
		ro.Password = o.Password
	}
	// A booking waits for its answer before a send leaves: a server that
	// does not answer in a second is gone for this run's purposes. One
	// retry rides out a dropped connection; a retried booking that had
	// been made only costs a slot.
	ro.DialTimeout, ro.ReadTimeout, ro.WriteTimeout = 2*time.Second, time.Second, time.Second
	ro.MaxRetries = 1
	ro.Protocol = 2 // RESP2: no HELLO, any Redis since 2.6 with Lua
	ro.DisableIdentity = true
	return ro, nil
}

// Redact is u without its password, for messages and logs.
func Redact(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	return p.Redacted()
}

// quiet discards go-redis's own log lines (a failed dial, printed to
// stderr): its errors come back to the caller, who says what they mean.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

var silence sync.Once

// Open connects to the budget o names and checks that it answers.
func Open(ctx context.Context, o Options) (*Budget, error) {
	silence.Do(func() { redis.SetLogger(quiet{}) })
	ro, err := Parse(o)
	if err != nil {
		return nil, err
	}
	b := &Budget{rdb: redis.NewClient(ro), url: Redact(o.URL), prefix: "bulksend:budget:"}
	if o.Namespace != "" {
		b.prefix += o.Namespace + ":"
	}
	if err := b.rdb.Ping(ctx).Err(); err != nil {
		b.rdb.Close()
		return nil, &Error{URL: b.url, Err: err}
	}
	return b, nil
}

// Close closes the connections.
func (b *Budget) Close() error { return b.rdb.Close() }

// URL is the budget's URL, without its password.
func (b *Budget) URL() string { return b.url }

func (b *Budget) keys(from string) []string {
	k := b.prefix + "{" + from + "}"
	return []string{k, k + ":c", k + ":r"}
}

//go:embed now.lua
var nowSrc string

//go:embed book.lua
var bookSrc string

//go:embed tell.lua
var tellSrc string

var (
	bookScript = redis.NewScript(nowSrc + bookSrc)
	tellScript = redis.NewScript(nowSrc + tellSrc)
)

// nowArg is the script's now: 0 for the server's clock.
func (b *Budget) nowArg() int64 {
	if b.now == nil {
		return 0
	}
	return b.now().UnixMicro()
}

func us(d time.Duration) int64 { return d.Microseconds() }

// Book books a slot for a send of cost parts from from (see pace.Book).
func (b *Budget) Book(ctx context.Context, from string, cost int, t pace.Terms) (pace.Booking, error) {
	cost = max(cost, 1)
	v, err := bookScript.Run(ctx, b.rdb, b.keys(from), b.nowArg(), cost, us(t.Interval), t.Allowed, t.Over,
		us(t.Hold), us(t.Guard), ttl.Milliseconds()).Slice()
	if err != nil {
		return pace.Booking{}, &Error{URL: b.url, Err: fmt.Errorf("book a send of %s: %w", from, err)}
	}
	bk, err := booking(v)
	if err != nil {
		return pace.Booking{}, &Error{URL: b.url, Err: fmt.Errorf("book a send of %s: %w", from, err)}
	}
	return bk, nil
}

// booking reads the book script's answer: the wait in µs, the parts seen,
// the trial flag, the shared limit and its version.
func booking(v []any) (pace.Booking, error) {
	if len(v) != 5 {
		return pace.Booking{}, fmt.Errorf("the script answered %d values, want 5", len(v))
	}
	var bk pace.Booking
	wait, err := num(v[0])
	if err != nil {
		return bk, err
	}
	seen, err := num(v[1])
	if err != nil {
		return bk, err
	}
	trial, err := num(v[2])
	if err != nil {
		return bk, err
	}
	if bk.Version, err = num(v[4]); err != nil {
		return bk, err
	}
	if s, _ := v[3].(string); s != "" {
		if bk.Limit, err = strconv.ParseFloat(s, 64); err != nil {
			return bk, fmt.Errorf("shared limit %q: %w", s, err)
		}
	}
	bk.Wait, bk.Seen, bk.Trial = time.Duration(wait)*time.Microsecond, int(seen), trial == 1
	return bk, nil
}

// num is an integer the script answered, as a number or a string.
func num(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case string:
		return strconv.ParseInt(x, 10, 64)
	}
	return 0, fmt.Errorf("the script answered %T, want an integer", v)
}

// Tell shares a limit or a rest of from (see pace.Book): the limit with a
// version later than any before it.
func (b *Budget) Tell(ctx context.Context, from string, n pace.News) (int64, error) {
	limit := ""
	if n.Limit > 0 {
		limit = strconv.FormatFloat(n.Limit, 'g', -1, 64)
	}
	s, err := tellScript.Run(ctx, b.rdb, b.keys(from)[:1], b.nowArg(), limit, us(n.Rest), ttl.Milliseconds()).Text()
	if err != nil {
		return 0, &Error{URL: b.url, Err: fmt.Errorf("share what was learned of %s: %w", from, err)}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, &Error{URL: b.url, Err: fmt.Errorf("share what was learned of %s: version %q: %w", from, s, err)}
	}
	return v, nil
}
