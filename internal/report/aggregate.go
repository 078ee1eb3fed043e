package report

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/store"
)

// throttled is the class of an attempt answered throttled.
var throttled = campaign.Throttled.String()

// accumulator adds up attempts one at a time, in any order, into the
// runs' and senders' counts and the rate series. Its memory is the
// buckets: senders × buckets, whatever the number of attempts.
type accumulator struct {
	width    time.Duration
	runs     map[int64]*Run
	segs     map[int64]*segmentAcc
	total    int64
	classes  map[string]int64
	codes    map[codeKey]int64
	bySender map[string]*senderAcc
}

// codeKey is an error attempts are counted under: its code, or, for an
// error without a code (AWS), its name.
type codeKey struct {
	code  int
	class string
	name  string // when code is 0
}

type senderAcc struct{ attempts, accepted, throttled int64 }

// segmentAcc is a segment being filled: its buckets, and where each
// sender's series is in it.
type segmentAcc struct {
	seg      *Segment
	buckets  int
	bySender map[string]int
}

// newAccumulator adds into runs (their counts) and ser (its segments'
// series), which timeline made: one segment per run, in the same order.
func newAccumulator(runs []Run, ser *Series) *accumulator {
	a := &accumulator{
		width: time.Duration(ser.BucketSeconds * float64(time.Second)),
		runs:  map[int64]*Run{}, segs: map[int64]*segmentAcc{},
		classes: map[string]int64{}, codes: map[codeKey]int64{}, bySender: map[string]*senderAcc{},
	}
	for i := range runs {
		a.runs[runs[i].ID] = &runs[i]
	}
	for i := range ser.Segments {
		s := &ser.Segments[i]
		a.segs[s.Run] = &segmentAcc{seg: s, buckets: s.Buckets(ser.BucketSeconds), bySender: map[string]int{}}
	}
	return a
}

// Buckets is how many buckets of width seconds the segment has: its
// duration over width, rounded, at least one. The last bucket takes the
// remainder, so it spans from half a width to one and a half: a run that
// ends just after a bucket starts shows no short bucket of a few sends.
func (s Segment) Buckets(width float64) int {
	if width <= 0 {
		return 1
	}
	return max(1, int(math.Round(s.End.Sub(s.Start).Seconds()/width)))
}

// bucketBounds is the start and end of bucket i, in seconds from the
// segment's start.
func (s Segment) bucketBounds(i int, width float64) (float64, float64) {
	from, to := float64(i)*width, float64(i+1)*width
	if i == s.Buckets(width)-1 {
		to = s.End.Sub(s.Start).Seconds()
	}
	return from, max(from, to)
}

// BucketSpan is how many seconds bucket i of the segment covers, at least
// one: what its count is divided by for a rate.
func (s Segment) BucketSpan(i int, width float64) float64 {
	from, to := s.bucketBounds(i, width)
	return max(1, to-from)
}

func (a *accumulator) add(at store.AttemptRow) {
	a.total++
	a.classes[at.Class]++
	switch {
	case at.Code != 0:
		a.codes[codeKey{code: at.Code, class: at.Class}]++
	case at.Error != "":
		a.codes[codeKey{class: at.Class, name: at.Error}]++
	}
	accepted, thr := at.Class == engine.Accepted, at.Class == throttled
	if r := a.runs[at.Run]; r != nil {
		r.Attempts++
		switch {
		case accepted:
			r.Accepted++
		case thr:
			r.Throttled++
		default:
			r.Other++
		}
	}
	s := a.bySender[at.Sender]
	if s == nil {
		s = &senderAcc{}
		a.bySender[at.Sender] = s
	}
	s.attempts++
	if accepted {
		s.accepted++
	} else if thr {
		s.throttled++
	}
	seg := a.segs[at.Run]
	if seg == nil {
		return
	}
	i, ok := seg.bySender[at.Sender]
	if !ok {
		i = len(seg.seg.Senders)
		seg.bySender[at.Sender] = i
		seg.seg.Senders = append(seg.seg.Senders, SenderSeries{Sender: at.Sender,
			Accepted: make([]int64, seg.buckets), Throttled: make([]int64, seg.buckets)})
	}
	b := 0
	if a.width > 0 {
		b = min(seg.buckets-1, max(0, int(at.At.Sub(seg.seg.Start)/a.width)))
	}
	switch {
	case accepted:
		seg.seg.Senders[i].Accepted[b] += int64(max(1, at.Parts))
	case thr:
		seg.seg.Senders[i].Throttled[b]++
	}
}

// attempts is the attempts' counts, by class and by code, each code with
// its title from titles, each error without a code titled by its name.
func (a *accumulator) attempts(titles map[int]string) Attempts {
	out := Attempts{Total: a.total, ByClass: []ClassCount{}, ByCode: []CodeCount{}}
	for c, n := range a.classes {
		out.ByClass = append(out.ByClass, ClassCount{Class: c, Attempts: n})
	}
	rank := func(c string) int {
		if i := slices.Index(classOrder, c); i >= 0 {
			return i
		}
		return len(classOrder)
	}
	slices.SortFunc(out.ByClass, func(x, y ClassCount) int {
		return cmp.Or(cmp.Compare(y.Attempts, x.Attempts), cmp.Compare(rank(x.Class), rank(y.Class)), cmp.Compare(x.Class, y.Class))
	})
	for k, n := range a.codes {
		c := CodeCount{Code: k.code, Class: k.class, Title: titles[k.code], Attempts: n}
		if k.code == 0 {
			c.Error, c.Title = k.name, k.name
		}
		out.ByCode = append(out.ByCode, c)
	}
	slices.SortFunc(out.ByCode, func(x, y CodeCount) int {
		return cmp.Or(cmp.Compare(y.Attempts, x.Attempts), cmp.Compare(x.Code, y.Code), cmp.Compare(x.Class, y.Class), cmp.Compare(x.Error, y.Error))
	})
	return out
}

// senders is each sender's figures: its rows' counts (bySender), its
// attempts, and its mean and peak rate in ser; sorted by number. Each
// segment's series are sorted by number too.
func (a *accumulator) senders(bySender []store.SenderCount, ser *Series) []Sender {
	byName := map[string]*Sender{}
	var out []Sender
	get := func(name string) *Sender {
		if s, ok := byName[name]; ok {
			return s
		}
		s := &Sender{Sender: name}
		byName[name] = s
		return s
	}
	for _, c := range bySender {
		get(c.Sender).Counts = c.Counts
	}
	for name, acc := range a.bySender {
		s := get(name)
		s.Attempts, s.Accepted, s.Throttled = acc.attempts, acc.accepted, acc.throttled
	}
	seconds, sent := map[string]float64{}, map[string]int64{}
	for i := range ser.Segments {
		seg := &ser.Segments[i]
		slices.SortFunc(seg.Senders, func(x, y SenderSeries) int { return cmp.Compare(x.Sender, y.Sender) })
		for _, ss := range seg.Senders {
			s := get(ss.Sender)
			seconds[ss.Sender] += max(1, seg.End.Sub(seg.Start).Seconds())
			for b, n := range ss.Accepted {
				sent[ss.Sender] += n
				s.PeakRate = max(s.PeakRate, float64(n)/seg.BucketSpan(b, ser.BucketSeconds))
			}
		}
	}
	for name, s := range byName {
		if seconds[name] > 0 {
			s.MeanRate = float64(sent[name]) / seconds[name]
		}
		out = append(out, *s)
	}
	slices.SortFunc(out, func(x, y Sender) int { return cmp.Compare(x.Sender, y.Sender) })
	return out
}

// histogram counts latencies in equal bins of a "nice" width below top,
// about p99 × 1.25, and one open bin above.
type histogram struct {
	width  time.Duration
	counts []int64 // the equal bins, then the open one
}

// newHistogram makes bins so that about n of them cover p99 with room to
// spare; the open bin is there only if max reaches it.
func newHistogram(p99, maxLatency time.Duration, n int) *histogram {
	w := max(time.Duration(niceStep(float64(p99)*1.25/float64(n))), time.Microsecond)
	k := max(1, min(int(math.Ceil(float64(p99)*1.25/float64(w))), int(maxLatency/w)+1))
	return &histogram{width: w, counts: make([]int64, k+1)}
}

func (h *histogram) add(d time.Duration) {
	i := int(d / h.width)
	h.counts[min(max(i, 0), len(h.counts)-1)]++
}

// bins are the histogram's bars in milliseconds; the open one only when
// it holds latencies.
func (h *histogram) bins() []Bin {
	ms := func(i int) float64 { return float64(time.Duration(i)*h.width) / float64(time.Millisecond) }
	var out []Bin
	for i, n := range h.counts[:len(h.counts)-1] {
		out = append(out, Bin{From: ms(i), To: ms(i + 1), Attempts: n})
	}
	if open := h.counts[len(h.counts)-1]; open > 0 {
		out = append(out, Bin{From: ms(len(h.counts) - 1), Attempts: open})
	}
	return out
}

// niceStep is the least of 1, 2 and 5 times a power of ten that is at
// least x (x > 0); 1 for x <= 0.
func niceStep(x float64) float64 {
	if x <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= x*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}
