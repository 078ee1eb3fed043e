package pace

import (
	"context"
	"errors"
	"testing"
	"time"
)

// fakeBook is a Book whose answers the test gives.
type fakeBook struct {
	book func(from string, cost int, t Terms) (Booking, error)
	tell func(from string, n News) (int64, error)
}

func (f *fakeBook) Book(_ context.Context, from string, cost int, t Terms) (Booking, error) {
	return f.book(from, cost, t)
}

func (f *fakeBook) Tell(_ context.Context, from string, n News) (int64, error) {
	if f.tell == nil {
		return 0, nil
	}
	return f.tell(from, n)
}

// TestSharedBook: a shared pacer's rules are the pacer's, and what it
// learns comes from, and goes to, the book.
func TestSharedBook(t *testing.T) {
	errGone := errors.New("gone")
	cases := []struct {
		name    string
		booking Booking
		bookErr error
		verdict Verdict
		limit   float64 // the pacer's limit after the answer
		told    News
	}{
		{name: "a throttle is learned from every process's sends", booking: Booking{Seen: 60},
			verdict: Throttled, limit: 60, told: News{Limit: 60}},
		{name: "a limit another process shared is taken", booking: Booking{Limit: 70, Version: 5},
			verdict: Counted, limit: 70},
		{name: "a throttle with nothing of the number's in the second rests every process", booking: Booking{Seen: 0},
			verdict: Throttled, limit: 100, told: News{Rest: firstPause}},
		{name: "a book that cannot be reached stops the wait", bookErr: errGone},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var terms Terms
			var told News
			p := Shared(100, &fakeBook{
				book: func(_ string, _ int, t Terms) (Booking, error) { terms = t; return tc.booking, tc.bookErr },
				tell: func(_ string, n News) (int64, error) { told = n; return 1, nil },
			})
			s, err := p.WaitN(context.Background(), "n", 1)
			if tc.bookErr != nil {
				if !errors.Is(err, tc.bookErr) {
					t.Fatalf("WaitN: %v, want the book's error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := (Terms{Interval: terms.Interval, Allowed: 98, Hold: time.Second + minLate}); terms != want || terms.Interval <= 0 {
				t.Errorf("terms %+v, want %+v (100/s less the first second's doubled headroom; a second and minLate)", terms, want)
			}
			p.Left(s, time.Now())
			p.Answered(s, tc.verdict, time.Now())
			if got := p.Limit("n"); got != tc.limit {
				t.Errorf("limit %v, want %v", got, tc.limit)
			}
			if told.Limit != tc.told.Limit || (told.Rest > 0) != (tc.told.Rest > 0) || told.Rest > tc.told.Rest {
				t.Errorf("told %+v, want %+v", told, tc.told)
			}
		})
	}
}
