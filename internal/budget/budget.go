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
	"cmp"
	"context"
	"crypto/tls"
	_ "embed"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"

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
	pool   *redis.Pool
	url    string // without its password
	prefix string
	// now, if not nil, gives the script its instants instead of the
	// server's TIME: tests with explicit times.
	now func() time.Time
}

var _ pace.Book = (*Budget)(nil)

// Server is the Redis server a budget URL names.
type Server struct {
	Addr               string // HOST:PORT
	DB                 int
	Username, Password string
	TLSConfig          *tls.Config // rediss://; nil for plain TCP
}

// Parse checks o and returns the server it names.
func Parse(o Options) (*Server, error) {
	u, err := url.Parse(o.URL)
	if err != nil {
		return nil, fmt.Errorf("budget URL: %w", err)
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return nil, fmt.Errorf("budget URL %q: want redis://HOST:PORT/DB or rediss://… (TLS)", Redact(o.URL))
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		return nil, fmt.Errorf("budget URL %q: no host", Redact(o.URL))
	}
	s := &Server{Addr: net.JoinHostPort(host, cmp.Or(port, "6379"))}
	if db := strings.TrimPrefix(u.Path, "/"); db != "" {
		if s.DB, err = strconv.Atoi(db); err != nil || s.DB < 0 {
			return nil, fmt.Errorf("budget URL %q: invalid database %q", Redact(o.URL), db)
		}
	}
	if u.User != nil {
		s.Username = u.User.Username()
		s.Password, _ = u.User.Password()
	}
	if o.Password != "" {
		if s.Password != "" {
			return nil, ErrTwoPasswords
		}
		s.Password = o.Password
	}
	if u.Scheme == "rediss" {
		s.TLSConfig = &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	}
	return s, nil
}

// dial opens a connection to s. A booking waits for its answer before a
// send leaves: a server that does not answer in a second is gone for this
// run's purposes. RESP2 commands only: any Redis since 2.6 with Lua.
func (s *Server) dial(ctx context.Context) (redis.Conn, error) {
	opts := []redis.DialOption{redis.DialConnectTimeout(2 * time.Second), redis.DialReadTimeout(time.Second),
		redis.DialWriteTimeout(time.Second), redis.DialDatabase(s.DB), redis.DialUsername(s.Username), redis.DialPassword(s.Password)}
	if s.TLSConfig != nil {
		opts = append(opts, redis.DialUseTLS(true), redis.DialTLSConfig(s.TLSConfig))
	}
	return redis.DialContext(ctx, "tcp", s.Addr, opts...)
}

// Redact is u without its password, for messages and logs.
func Redact(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	return p.Redacted()
}

// Open connects to the budget o names and checks that it answers.
func Open(ctx context.Context, o Options) (*Budget, error) {
	s, err := Parse(o)
	if err != nil {
		return nil, err
	}
	b := &Budget{
		// As many idle connections as sends in flight may want at once: a
		// booking never waits for another's connection.
		pool: &redis.Pool{DialContext: s.dial, MaxIdle: 256, IdleTimeout: time.Minute},
		url:  Redact(o.URL), prefix: "bulksend:budget:",
	}
	if o.Namespace != "" {
		b.prefix += o.Namespace + ":"
	}
	if _, err := b.do(ctx, func(c redis.ConnWithContext) (any, error) { return c.DoContext(ctx, "PING") }); err != nil {
		b.pool.Close()
		return nil, &Error{URL: b.url, Err: err}
	}
	return b, nil
}

// do runs f on a connection of the pool. One retry on a fresh connection
// rides out a dropped one; a retried booking that had been made only
// costs a slot. An answer of the server's (an error of a script) is not
// retried.
func (b *Budget) do(ctx context.Context, f func(c redis.ConnWithContext) (any, error)) (v any, err error) {
	for range 2 {
		var c redis.Conn
		if c, err = b.pool.GetContext(ctx); err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			continue
		}
		v, err = f(c.(redis.ConnWithContext))
		c.Close()
		var answered redis.Error
		if err == nil || errors.As(err, &answered) || ctx.Err() != nil {
			return v, err
		}
	}
	return nil, err
}

// Close closes the connections.
func (b *Budget) Close() error { return b.pool.Close() }

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
	bookScript = redis.NewScript(3, nowSrc+bookSrc)
	tellScript = redis.NewScript(1, nowSrc+tellSrc)
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
	k := b.keys(from)
	v, err := redis.Values(b.do(ctx, func(c redis.ConnWithContext) (any, error) {
		return bookScript.DoContext(ctx, c, k[0], k[1], k[2], b.nowArg(), cost, us(t.Interval), t.Allowed, t.Over,
			us(t.Hold), us(t.Guard), ttl.Milliseconds())
	}))
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
	if s, _ := v[3].([]byte); len(s) > 0 {
		if bk.Limit, err = strconv.ParseFloat(string(s), 64); err != nil {
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
	case []byte:
		return strconv.ParseInt(string(x), 10, 64)
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
	s, err := redis.String(b.do(ctx, func(c redis.ConnWithContext) (any, error) {
		return tellScript.DoContext(ctx, c, b.keys(from)[0], b.nowArg(), limit, us(n.Rest), ttl.Milliseconds())
	}))
	if err != nil {
		return 0, &Error{URL: b.url, Err: fmt.Errorf("share what was learned of %s: %w", from, err)}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, &Error{URL: b.url, Err: fmt.Errorf("share what was learned of %s: version %q: %w", from, s, err)}
	}
	return v, nil
}
