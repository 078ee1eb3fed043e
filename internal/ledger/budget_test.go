package ledger

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

const portfolio = "whatsapp:102290129340398"

const h = time.Hour

func at(d time.Duration) time.Time { return t0.Add(d) }

// yn writes admitted as y and n: "yyn".
func yn(admitted []bool) string {
	var b strings.Builder
	for _, a := range admitted {
		if a {
			b.WriteByte('y')
		} else {
			b.WriteByte('n')
		}
	}
	return b.String()
}

// counted is the window of key at now counted from the sends table, with
// none of the budget's bookkeeping.
func counted(t *testing.T, l *Ledger, key string, now time.Time) int {
	t.Helper()
	var n int
	must(t, l.db.QueryRow(`SELECT COUNT(*) FROM sends WHERE key = ? AND at > ?`, key, ms(now)-dayMS).Scan(&n))
	return n
}

// checkBudgets fails when a budget row's count is not what the sends
// table holds in its window.
func checkBudgets(t *testing.T, l *Ledger) {
	t.Helper()
	rows, err := l.db.Query(`SELECT key, used, (SELECT COUNT(*) FROM sends s WHERE s.key = b.key AND s.at > b.as_of - 86400000) FROM budgets b`)
	must(t, err)
	defer rows.Close()
	for rows.Next() {
		var key string
		var used, want int
		must(t, rows.Scan(&key, &used, &want))
		if used != want {
			t.Errorf("budget %s: used %d, but %d sends in its window", key, used, want)
		}
	}
	must(t, rows.Err())
}

func TestAdmit(t *testing.T) {
	type step struct {
		key    string        // "" for portfolio
		at     time.Duration // after t0
		phones string        // comma-separated
		limit  int
		want   string // y admitted, n refused, per phone
	}
	for _, tc := range []struct {
		name     string
		steps    []step
		usedAt   time.Duration
		wantUsed int
	}{
		{"the limit caps new phones", []step{
			{at: 0, phones: "a,b,c,d", limit: 3, want: "yyyn"},
		}, 0, 3},
		{"a phone sent twice within 24h counts once", []step{
			{at: 0, phones: "a", limit: 2, want: "y"},
			{at: 1 * h, phones: "a", limit: 2, want: "y"},
			{at: 2 * h, phones: "b", limit: 2, want: "y"},
			{at: 3 * h, phones: "c,a,b", limit: 2, want: "nyy"},
		}, 3 * h, 2},
		{"the limit rolls over after 24h", []step{
			{at: 0, phones: "a,b", limit: 2, want: "yy"},
			{at: 24*h - time.Millisecond, phones: "c", limit: 2, want: "n"},
			{at: 24 * h, phones: "c,d,e", limit: 2, want: "yyn"},
		}, 24 * h, 2},
		{"a resend moves the phone's time", []step{
			{at: 0, phones: "a", limit: 2, want: "y"},
			{at: 1 * h, phones: "b", limit: 2, want: "y"},
			{at: 20 * h, phones: "a", limit: 2, want: "y"},
			{at: 24 * h, phones: "c", limit: 2, want: "n"}, // a was sent again at 20h
			{at: 25 * h, phones: "c,d", limit: 2, want: "yn"},
		}, 25 * h, 2},
		{"a phone sent again after 24h is new", []step{
			{at: 0, phones: "a,b", limit: 2, want: "yy"},
			{at: 30 * h, phones: "c", limit: 2, want: "y"},
			{at: 31 * h, phones: "a,b", limit: 2, want: "yn"},
		}, 31 * h, 2},
		{"repeats within one call count once", []step{
			{at: 0, phones: "a,a,b,a", limit: 1, want: "yyny"},
		}, 0, 1},
		{"refused phones take nothing", []step{
			{at: 0, phones: "a", limit: 1, want: "y"},
			{at: 1 * h, phones: "b", limit: 1, want: "n"},
			{at: 24 * h, phones: "b", limit: 1, want: "y"},
		}, 24 * h, 1},
		{"limit 0 admits and records every phone", []step{
			{at: 0, phones: "a,b,c", limit: 0, want: "yyy"},
			{at: 1 * h, phones: "d,a", limit: 2, want: "ny"},
			{at: 2 * h, phones: "e", limit: -1, want: "y"},
		}, 2 * h, 4},
		{"a lowered limit still admits sent phones", []step{
			{at: 0, phones: "a,b,c", limit: 5, want: "yyy"},
			{at: 1 * h, phones: "d,c", limit: 1, want: "ny"},
		}, 1 * h, 3},
		{"keys have budgets of their own", []step{
			{key: "whatsapp:1", at: 0, phones: "a", limit: 1, want: "y"},
			{key: "whatsapp:2", at: 0, phones: "a,b", limit: 1, want: "yn"},
			{key: "sms:+12065550100", at: 0, phones: "b", limit: 1, want: "y"},
		}, 0, 0},
		{"sends recorded after now count", []step{
			{at: 10 * h, phones: "a,b", limit: 2, want: "yy"},
			{at: 9 * h, phones: "c,b", limit: 2, want: "ny"},
		}, 10 * h, 2},
		{"a process whose clock is late", []step{
			{at: 10 * h, phones: "a", limit: 2, want: "y"},
			{at: 9 * h, phones: "b", limit: 2, want: "y"},
			{at: 9*h + 30*time.Minute, phones: "c,a", limit: 2, want: "ny"},
			{at: 33*h + time.Millisecond, phones: "c", limit: 2, want: "y"}, // b left at 33h; a, sent at 10h, is still in
			{at: 33*h + time.Millisecond, phones: "d", limit: 2, want: "n"},
		}, 33*h + time.Millisecond, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			l := newLedger(t)
			for i, s := range tc.steps {
				key := s.key
				if key == "" {
					key = portfolio
				}
				got, err := l.Admit(ctx, key, strings.Split(s.phones, ","), at(s.at), s.limit)
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if yn(got) != s.want {
					t.Errorf("step %d: Admit(%s, %s, +%v, %d) = %s, want %s", i, key, s.phones, s.at, s.limit, yn(got), s.want)
				}
				checkBudgets(t, l)
			}
			used, _, err := l.Used(ctx, portfolio, at(tc.usedAt))
			if err != nil {
				t.Fatal(err)
			}
			if used != tc.wantUsed {
				t.Errorf("Used at +%v = %d, want %d", tc.usedAt, used, tc.wantUsed)
			}
			if want := counted(t, l, portfolio, at(tc.usedAt)); used != want {
				t.Errorf("Used at +%v = %d, but the sends table holds %d", tc.usedAt, used, want)
			}
		})
	}
}

func TestAdmitRefusesBadInput(t *testing.T) {
	l := newLedger(t)
	for _, tc := range []struct {
		name   string
		key    string
		phones []string
	}{
		{"empty key", "", []string{"+15550001"}},
		{"empty phone", portfolio, []string{"+15550001", ""}},
		{"phone not UTF-8", portfolio, []string{"+1555\xff"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := l.Admit(context.Background(), tc.key, tc.phones, t0, 10); err == nil {
				t.Fatal("admitted")
			}
			if n := counted(t, l, portfolio, t0); n != 0 {
				t.Fatalf("%d sends recorded", n)
			}
		})
	}
	got, err := l.Admit(context.Background(), portfolio, nil, t0, 10)
	if err != nil || len(got) != 0 {
		t.Fatalf("Admit of no phones = %v, %v", got, err)
	}
}

func TestUsed(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t)
	for _, s := range []struct {
		at     time.Duration
		phones []string
	}{
		{0, []string{"a", "b"}},
		{2 * h, []string{"c"}},
		{5 * h, []string{"a"}}, // a moves to 5h
	} {
		if _, err := l.Admit(ctx, portfolio, s.phones, at(s.at), 0); err != nil {
			t.Fatal(err)
		}
	}
	none := time.Duration(-1)
	for _, tc := range []struct {
		name     string
		at       time.Duration
		want     int
		wantNext time.Duration // none: the zero time
	}{
		{"all in", 6 * h, 3, 24 * h},
		{"b left", 24 * h, 2, 26 * h},
		{"c left", 26 * h, 1, 29 * h},
		{"a left", 29 * h, 0, none},
		{"long after", 40 * 24 * h, 0, none},
		// A clock stepped back: what was recorded after now counts, so
		// that the step never lets a limit be overrun.
		{"sends recorded after now", -1 * h, 3, 24 * h},
	} {
		t.Run(tc.name, func(t *testing.T) {
			used, next, err := l.Used(ctx, portfolio, at(tc.at))
			if err != nil {
				t.Fatal(err)
			}
			wantNext := time.Time{}
			if tc.wantNext != none {
				wantNext = at(tc.wantNext)
			}
			if used != tc.want || !next.Equal(wantNext) {
				t.Errorf("Used(+%v) = %d, %v; want %d, %v", tc.at, used, next, tc.want, wantNext)
			}
		})
	}
	if used, next, err := l.Used(ctx, "sms:none", t0); err != nil || used != 0 || !next.IsZero() {
		t.Errorf("Used of a key never admitted = %d, %v, %v", used, next, err)
	}
}

func TestFreeAt(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t)
	// Sends at 0, 1h and 2h, and a at 0 sent again at 3h.
	for i, p := range []string{"a", "b", "c"} {
		if _, err := l.Admit(ctx, portfolio, []string{p}, at(time.Duration(i)*h), 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Admit(ctx, portfolio, []string{"a"}, at(3*h), 0); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		now   time.Duration
		limit int
		want  time.Duration
	}{
		{"room now", 4 * h, 4, 4 * h},
		{"no limit", 4 * h, 0, 4 * h},
		{"full: when the oldest leaves", 4 * h, 3, 25 * h},
		{"over by one: when the two oldest leave", 4 * h, 2, 26 * h},
		{"over by two: when all leave", 4 * h, 1, 27 * h},
		{"asked at the instant room opens", 25 * h, 3, 25 * h},
		{"asked after the instant room opens", 25*h + time.Minute, 2, 26 * h},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := l.FreeAt(ctx, portfolio, at(tc.now), tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if want := at(tc.want); !got.Equal(want) {
				t.Fatalf("FreeAt(+%v, %d) = +%v, want +%v", tc.now, tc.limit, got.Sub(t0), tc.want)
			}
			if tc.limit <= 0 {
				return
			}
			// FreeAt agrees with Admit: room at that instant, none a
			// millisecond before (asked of a copy, to leave l as it is).
			if got.After(at(tc.now)) && roomAt(t, l, got.Add(-time.Millisecond), tc.limit) {
				t.Errorf("room for a new phone a millisecond before FreeAt")
			}
			if !roomAt(t, l, got, tc.limit) {
				t.Errorf("no room for a new phone at FreeAt")
			}
		})
	}
}

// roomAt says whether key's window at now leaves room under limit.
func roomAt(t *testing.T, l *Ledger, now time.Time, limit int) bool {
	t.Helper()
	used, _, err := l.Used(context.Background(), portfolio, now)
	must(t, err)
	return used < limit
}

func TestForget(t *testing.T) {
	type op struct {
		forget bool
		at     time.Duration
		phones string
	}
	for _, tc := range []struct {
		name  string
		ops   []op
		check time.Duration
		want  int // used at check
	}{
		{"a new phone forgotten gives its room back", []op{
			{false, 0, "a,b"},
			{true, 0, "a"},
		}, 1 * h, 1},
		{"forgetting another instant changes nothing", []op{
			{false, 0, "a,b"},
			{true, 1 * h, "a,b"},
		}, 1 * h, 2},
		{"a resend forgotten keeps the first send", []op{
			{false, 0, "a"},
			{false, 10 * h, "a"},
			{true, 10 * h, "a"},
		}, 23 * h, 1},
		{"a resend forgotten leaves with the first send", []op{
			{false, 0, "a"},
			{false, 10 * h, "a"},
			{true, 10 * h, "a"},
		}, 24 * h, 0},
		{"a phone sent again after 24h, forgotten, leaves again", []op{
			{false, 0, "a"},
			{false, 30 * h, "a"},
			{true, 30 * h, "a"},
		}, 30 * h, 0},
		{"phones never recorded", []op{
			{false, 0, "a"},
			{true, 0, "x,y"},
		}, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			l := newLedger(t)
			for _, o := range tc.ops {
				phones := strings.Split(o.phones, ",")
				var err error
				if o.forget {
					err = l.Forget(ctx, portfolio, phones, at(o.at))
				} else {
					_, err = l.Admit(ctx, portfolio, phones, at(o.at), 0)
				}
				must(t, err)
				checkBudgets(t, l)
			}
			used, _, err := l.Used(ctx, portfolio, at(tc.check))
			must(t, err)
			if used != tc.want || used != counted(t, l, portfolio, at(tc.check)) {
				t.Errorf("used at +%v = %d (sends table %d), want %d", tc.check, used, counted(t, l, portfolio, at(tc.check)), tc.want)
			}
		})
	}
}

// TestBudgetMatchesModel drives one key through random Admits (with a
// clock that sometimes runs late), Forgets and Prunes, and checks each
// answer against a model that keeps every phone's last send and counts
// the window by scanning them all: the budget rows' bookkeeping must never
// change an answer.
func TestBudgetMatchesModel(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t)
	r := rand.New(rand.NewPCG(28, 14))
	type send struct {
		at, prev int64
		hasPrev  bool
	}
	model := map[string]send{}
	window := func(n int64) int {
		c := 0
		for _, s := range model {
			if s.at > n-dayMS {
				c++
			}
		}
		return c
	}
	type claim struct {
		at     time.Time
		phones []string
	}
	var claims []claim
	const limit = 25
	now := t0
	for i := range 3000 {
		switch d := r.IntN(100); {
		case d < 3:
			now = now.Add(-time.Duration(r.IntN(20)) * time.Minute) // a late clock
		case d < 4:
			now = now.Add(31 * 24 * h)
		default:
			now = now.Add(time.Duration(r.IntN(90)) * time.Minute)
		}
		n := ms(now)
		switch op := r.IntN(100); {
		case op < 80:
			phones := make([]string, 1+r.IntN(8))
			for k := range phones {
				phones[k] = fmt.Sprintf("+1555%04d", r.IntN(80))
			}
			got, err := l.Admit(ctx, portfolio, phones, now, limit)
			must(t, err)
			u := window(n)
			want := make([]bool, len(phones))
			var sent []string
			for k, p := range phones {
				s, ok := model[p]
				if !ok || s.at <= n-dayMS {
					if u >= limit {
						continue
					}
					u++
				}
				want[k] = true
				if n > s.at || !ok {
					model[p] = send{at: n, prev: s.at, hasPrev: ok}
				}
				sent = append(sent, p)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("op %d: Admit(%v, +%v) = %s, model %s", i, phones, now.Sub(t0), yn(got), yn(want))
			}
			claims = append(claims, claim{now, sent})
		case op < 92 && len(claims) > 0:
			c := claims[r.IntN(len(claims))]
			must(t, l.Forget(ctx, portfolio, c.phones, c.at))
			for _, p := range c.phones {
				if s, ok := model[p]; ok && s.at == ms(c.at) {
					if s.hasPrev {
						model[p] = send{at: s.prev}
					} else {
						delete(model, p)
					}
				}
			}
		default:
			must(t, l.Prune(ctx, now))
			for p, s := range model {
				if s.at < ms(now.Add(-retention)) {
					delete(model, p)
				}
			}
		}
		checkBudgets(t, l)
		used, _, err := l.Used(ctx, portfolio, now)
		must(t, err)
		if want := window(n); used != want {
			t.Fatalf("op %d: Used(+%v) = %d, model %d", i, now.Sub(t0), used, want)
		}
		free, err := l.FreeAt(ctx, portfolio, now, limit)
		must(t, err)
		if window(ms(free)) >= limit || (free.After(now) && window(ms(free)-1) < limit) {
			t.Fatalf("op %d: FreeAt(+%v) = +%v, which the model does not find the first instant with room", i, now.Sub(t0), free.Sub(t0))
		}
	}
}
