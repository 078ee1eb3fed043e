package cli

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/report"
)

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

type progress struct {
	done chan struct{}
	exit chan struct{}
}

// startProgress shows how a run goes: a bar on a terminal, a plain line
// every interval otherwise (cron mails and logs stay readable).
// parts: the channel paces message parts (SMS): the rate shown is theirs.
func startProgress(ios *IO, eng *engine.Engine, start campaign.Counts, interval time.Duration, parts bool) *progress {
	p := &progress{done: make(chan struct{}), exit: make(chan struct{})}
	total := start.Pending // rows in doubt are not sent (unless --in-doubt resend made them pending)
	var bar *progressbar.ProgressBar
	tick := interval
	if ios.IsTerminal() {
		bar = progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(ios.Err), // progressbar defaults to stdout, which is data
			progressbar.OptionSetDescription("sending"),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString(unitName(parts)),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
		tick = 200 * time.Millisecond
	}
	go func() {
		defer close(p.exit)
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-p.done:
				if bar != nil {
					bar.Finish()
				}
				return
			case <-t.C:
				s := eng.Stats()
				settled := s.Sent + s.Failed + s.InDoubt
				if bar != nil {
					bar.Describe(fmt.Sprintf("sent %d · failed %d · retrying %d · in doubt %d%s", s.Sent, s.Failed, s.Retries, s.InDoubt, learnedList(" · accepts ", s.Learned)))
					bar.Set64(settled)
					continue
				}
				fmt.Fprintln(ios.Err, progressLine(s, total, time.Now(), parts))
			}
		}
	}()
	return p
}

func (p *progress) stop() {
	close(p.done)
	<-p.exit
}

// unitName is what the rate counts: SMS parts, else messages.
func unitName(parts bool) string {
	if parts {
		return "parts"
	}
	return "msg"
}

func progressLine(s engine.Stats, total int64, now time.Time, parts bool) string {
	settled := s.Sent + s.Failed + s.InDoubt
	el := now.Sub(s.Started).Seconds()
	rate, shown := 0.0, 0.0 // rows settled a second, and what the rate counts
	if el > 0 {
		rate = float64(settled) / el
		shown = rate
		if parts {
			shown = float64(s.SentCost) / el
		}
	}
	eta := "-"
	if rate > 0 && total > settled {
		eta = (time.Duration(float64(total-settled)/rate) * time.Second).Round(time.Second).String()
	}
	pct := 100.0
	if total > 0 {
		pct = 100 * float64(settled) / float64(total)
	}
	return fmt.Sprintf("bulksend: progress: %d/%d (%.1f%%) · %.0f %s/s · sent %d · failed %d · retrying %d · throttled %d · in doubt %d · in flight %d · ETA %s%s",
		settled, total, pct, shown, unitName(parts), s.Sent, s.Failed, s.Retries, s.Throttled, s.InDoubt, s.InFlight, eta, learnedList(" · accepts ", s.Learned))
}

// learnedList is " · accepts A ≈300/s, B ≈80/s" (after prefix) for the
// numbers that accept less than the rate; "" when none.
func learnedList(prefix string, learned map[string]float64) string {
	if len(learned) == 0 {
		return ""
	}
	var parts []string
	for _, s := range slices.Sorted(maps.Keys(learned)) {
		parts = append(parts, fmt.Sprintf("%s ≈%.0f/s", esc(s), learned[s]))
	}
	return prefix + strings.Join(parts, ", ")
}

// printSummary prints the final counts; they always add up to the rows.
func printSummary(ios *IO, c campaign.Counts, s engine.Stats, parts bool) {
	el := time.Since(s.Started)
	rate := 0.0
	if el > 0 {
		rate = float64(s.Sent) / el.Seconds()
		if parts {
			rate = float64(s.SentCost) / el.Seconds()
		}
	}
	held := ""
	if s.Held > 0 {
		held = fmt.Sprintf(" (%d held for quality assessment)", s.Held)
	}
	fmt.Fprintf(ios.Err, "bulksend: this run: %d accepted%s, %d failed, %d retries scheduled, %d throttled, %d in doubt, in %s (%.1f %s/s)\n",
		s.Sent, held, s.Failed, s.Retries, s.Throttled, s.InDoubt, el.Round(time.Millisecond), rate, unitName(parts))
	for _, n := range slices.Sorted(maps.Keys(s.Learned)) {
		fmt.Fprintf(ios.Err, "bulksend: number %s accepts about %.0f/s, less than --rate: pass --rate %.0f for it (a resume starts it there)\n", esc(n), s.Learned[n], s.Learned[n])
	}
	fmt.Fprintf(ios.Err, "bulksend: campaign: %s\n", report.CountsLine(c))
}
