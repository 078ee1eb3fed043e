package budget

import (
	"context"
	"errors"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/bulksend/bulksend/internal/pace"
)

// clock is an explicit time the script is given.
type clock struct{ t time.Time }

func (c *clock) now() time.Time               { return c.t }
func (c *clock) add(d time.Duration)          { c.t = c.t.Add(d) }
func (c *clock) at(d time.Duration) time.Time { return c.t.Add(d) }

// scripted is a Budget on a miniredis server whose script takes its
// instants from the returned clock.
func scripted(t *testing.T) (*Budget, *clock, *miniredis.Miniredis) {
	t.Helper()
	mr := miniredis.RunT(t)
	b, err := Open(context.Background(), Options{URL: "redis://" + mr.Addr() + "/0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	b.now = c.now
	return b, c, mr
}

func book(t *testing.T, b *Budget, cost int, terms pace.Terms) pace.Booking {
	t.Helper()
	bk, err := b.Book(context.Background(), "1000001", cost, terms)
	if err != nil {
		t.Fatal(err)
	}
	return bk
}

// TestBookSlots: slots as the pacer's rules say, booked by one caller at
// explicit instants.
func TestBookSlots(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name  string
		terms pace.Terms
		limit float64         // > 0: each send's Hold is max(1 s, its parts ÷ limit)
		costs []int           // booked one after the other at the same instant
		waits []time.Duration // the wait of each
		seen  []int
	}{
		{
			name:  "spaced by the pace",
			terms: pace.Terms{Interval: 10 * ms, Allowed: 100, Hold: time.Second},
			costs: []int{1, 1, 1},
			waits: []time.Duration{0, 10 * ms, 20 * ms},
			seen:  []int{0, 1, 2},
		},
		{
			name:  "a full second holds the next until its oldest stops counting",
			terms: pace.Terms{Interval: ms, Allowed: 3, Hold: time.Second},
			costs: []int{1, 1, 1, 1, 1},
			waits: []time.Duration{0, ms, 2 * ms, time.Second, time.Second + ms},
			seen:  []int{0, 1, 2, 2, 2},
		},
		{
			name: "parts count at once, and the next waits for room plus the guard",
			// 10 parts a second at a pace of 10/s: three 3-part sends fit,
			// a fourth waits for the first to stop counting.
			terms: pace.Terms{Interval: 100 * ms, Allowed: 10, Hold: time.Second, Guard: 5 * ms},
			costs: []int{3, 3, 3, 3},
			waits: []time.Duration{0, 300 * ms, 600 * ms, 1005 * ms},
			seen:  []int{0, 3, 6, 6},
		},
		{
			name: "a send larger than the second allows goes alone into an empty one",
			// 2.5/s: a 3-part SMS counts 1.2 s; the next waits for it.
			terms: pace.Terms{Interval: 400 * ms, Allowed: 2},
			limit: 2.5,
			costs: []int{1, 3, 1},
			waits: []time.Duration{0, time.Second, 2200 * ms},
			seen:  []int{0, 0, 0},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, _, _ := scripted(t)
			for i, cost := range tc.costs {
				terms := tc.terms
				if tc.limit > 0 {
					terms.Hold = max(time.Second, time.Duration(float64(cost)/tc.limit*float64(time.Second)))
				}
				bk := book(t, b, cost, terms)
				if bk.Wait != tc.waits[i] || bk.Seen != tc.seen[i] {
					t.Errorf("send %d (%d parts): wait %v, seen %d; want %v, %d", i, cost, bk.Wait, bk.Seen, tc.waits[i], tc.seen[i])
				}
			}
		})
	}
}

// TestBookTrial: a trial's sends go over the limit at once, up to what it
// tests, and no further.
func TestBookTrial(t *testing.T) {
	b, _, _ := scripted(t)
	terms := pace.Terms{Interval: time.Microsecond, Allowed: 3, Hold: time.Second}
	for range 3 {
		book(t, b, 1, terms)
	}
	terms.Over = 5
	for i, want := range []bool{true, true, false} {
		bk := book(t, b, 1, terms)
		if bk.Trial != want {
			t.Errorf("send %d over the limit: trial %v, want %v (wait %v, seen %d)", i, bk.Trial, want, bk.Wait, bk.Seen)
		}
		if want && bk.Wait != 0 {
			t.Errorf("trial send %d waits %v: it goes at once", i, bk.Wait)
		}
	}
}

// TestTellShares: a limit told has a version later than any before it,
// and every booking tells it; a rest told holds every booking.
func TestTellShares(t *testing.T) {
	b, c, _ := scripted(t)
	ctx := context.Background()
	terms := pace.Terms{Interval: time.Millisecond, Allowed: 100, Hold: time.Second}
	if bk := book(t, b, 1, terms); bk.Version != 0 || bk.Limit != 0 {
		t.Fatalf("a fresh number tells a limit: %+v", bk)
	}
	v1, err := b.Tell(ctx, "1000001", pace.News{Limit: 61.5})
	if err != nil {
		t.Fatal(err)
	}
	v2, err := b.Tell(ctx, "1000001", pace.News{Limit: 60}) // the same instant
	if err != nil {
		t.Fatal(err)
	}
	if v2 <= v1 {
		t.Fatalf("versions %d then %d: want later", v1, v2)
	}
	if bk := book(t, b, 1, terms); bk.Version != v2 || bk.Limit != 60 {
		t.Fatalf("booking tells %v (version %d), want 60 (%d)", bk.Limit, bk.Version, v2)
	}
	c.add(10 * time.Millisecond)
	if _, err := b.Tell(ctx, "1000001", pace.News{Rest: 500 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if bk := book(t, b, 1, terms); bk.Wait != 500*time.Millisecond {
		t.Fatalf("booking during a rest of 500ms waits %v", bk.Wait)
	}
}

// TestBookNeverOverfills: callers with their own costs and trials book at
// random instants; no sliding second of slots holds more parts than the
// caller allowed, and a number's keys shrink as bookings age.
func TestBookNeverOverfills(t *testing.T) {
	b, c, mr := scripted(t)
	rng := rand.New(rand.NewPCG(7, 9))
	const allowed = 20
	type slot struct {
		at   time.Time
		cost int
		hold time.Duration
	}
	var slots []slot
	for range 3000 {
		c.add(time.Duration(rng.IntN(300)) * time.Millisecond) // about what the second allows
		cost := 1 + rng.IntN(4)
		if rng.IntN(50) == 0 {
			cost = allowed + 5 // larger than a second allows
		}
		hold := max(time.Second, time.Duration(cost)*time.Second/allowed)
		terms := pace.Terms{Interval: time.Second / allowed, Allowed: allowed, Hold: hold, Guard: time.Millisecond}
		bk := book(t, b, cost, terms)
		if bk.Wait < 0 {
			t.Fatalf("wait %v", bk.Wait)
		}
		slots = append(slots, slot{c.at(bk.Wait), cost, hold})
	}
	sort.SliceStable(slots, func(i, j int) bool { return slots[i].at.Before(slots[j].at) })
	// At each slot, the parts of every slot that still counts then.
	for i, s := range slots {
		n := 0
		for _, o := range slots[:i+1] {
			if o.at.Add(o.hold).After(s.at) {
				n += o.cost
			}
		}
		if n > allowed && n > s.cost {
			t.Fatalf("at slot %d (%v) %d parts count, allowed %d", i, s.at, n, allowed)
		}
	}
	// Kept: about the bookings whose parts count after two seconds before
	// the last booking.
	live := 0
	for _, s := range slots {
		if s.at.Add(s.hold).After(c.t.Add(-2 * time.Second)) {
			live++
		}
	}
	if m, _ := mr.ZMembers("bulksend:budget:{1000001}:c"); len(m) > live+5 || len(m) > 1000 {
		t.Errorf("%d bookings kept, %d count within two seconds: old ones are not forgotten", len(m), live)
	}
}

// TestUnavailable: a server that goes away fails the next booking with
// ErrUnavailable, naming the URL without its password.
func TestUnavailable(t *testing.T) {
	b, _, mr := scripted(t)
	terms := pace.Terms{Interval: time.Millisecond, Allowed: 10, Hold: time.Second}
	book(t, b, 1, terms)
	mr.Close()
	_, err := b.Book(context.Background(), "1000001", 1, terms)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("after the server went away: %v, want ErrUnavailable", err)
	}
	if _, err := b.Tell(context.Background(), "1000001", pace.News{Limit: 5}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("tell after the server went away: %v", err)
	}
}

func TestParse(t *testing.T) {
	cases := []struct {
		name, url, password string
		addr, wantPassword  string
		db                  int
		tls                 bool
		err                 string
	}{
		{name: "plain", url: "redis://10.0.0.5:6380/2", addr: "10.0.0.5:6380", db: 2},
		{name: "default port", url: "redis://cache", addr: "cache:6379"},
		{name: "password in the URL", url: "redis://:s3cret@cache:6379/0", addr: "cache:6379", wantPassword: "s3cret"},
		{name: "password apart", url: "rediss://cache:6379/1", password: "s3cret", addr: "cache:6379", wantPassword: "s3cret", db: 1, tls: true},
		{name: "two passwords", url: "redis://:a@cache/0", password: "b", err: "has a password"},
		{name: "not redis", url: "http://cache:6379", err: "want redis://"},
		{name: "no host", url: "redis:///0", err: "no host"},
		{name: "bad db", url: "redis://cache/x", err: "invalid database"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Parse(Options{URL: tc.url, Password: tc.password})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Fatalf("the password shows in %q", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.Addr != tc.addr || o.DB != tc.db || o.Password != tc.wantPassword || (o.TLSConfig != nil) != tc.tls {
				t.Fatalf("got %s db %d password %q tls %v", o.Addr, o.DB, o.Password, o.TLSConfig != nil)
			}
		})
	}
	if r := Redact("redis://:s3cret@cache:6379/0"); strings.Contains(r, "s3cret") {
		t.Fatalf("Redact: %s", r)
	}
}
