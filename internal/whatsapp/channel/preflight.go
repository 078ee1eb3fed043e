package channel

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/bulksend/bulksend/internal/csvin"
	"github.com/bulksend/bulksend/internal/listen"
	"github.com/bulksend/bulksend/internal/run"
	"github.com/bulksend/bulksend/internal/store"
	"github.com/bulksend/bulksend/internal/termtext"
	"github.com/bulksend/bulksend/internal/whatsapp"
	"github.com/bulksend/bulksend/internal/whatsapp/sandbox"
)

// PreflightRecord is what a preflight read of the sender numbers found;
// it is kept in the checkpoint's settings and shown by status.
type PreflightRecord struct {
	At           time.Time      `json:"at"`
	Numbers      []NumberRecord `json:"numbers"`
	UniquePhones int64          `json:"unique_phones"`
	USPhones     int64          `json:"us_phones"`
}

// NumberRecord is one sender number as the preflight read it.
type NumberRecord struct {
	ID             string   `json:"id"`
	Display        string   `json:"display_phone_number,omitempty"`
	Health         string   `json:"can_send_message,omitempty"`
	Quality        string   `json:"quality_rating,omitempty"`
	Throughput     string   `json:"throughput_level,omitempty"`
	MessagingLimit string   `json:"messaging_limit,omitempty"`
	Problems       []string `json:"problems,omitempty"` // Meta's health errors
}

// WriteText writes the record as status shows it, after a blank line:
// each number's health, quality, throughput and limit, and its problems.
func (rec *PreflightRecord) WriteText(w io.Writer) {
	esc := termtext.Escape // Meta's values and words, outside text
	fmt.Fprintf(w, "\npreflight (%s):\n", rec.At.Format(time.RFC3339))
	for _, n := range rec.Numbers {
		fmt.Fprintf(w, "  %-18s %-16s health %s · quality %s · throughput %s · messaging limit %s\n",
			esc(n.ID), esc(n.Display), esc(dash(n.Health)), esc(dash(n.Quality)), esc(dash(n.Throughput)), esc(dash(n.MessagingLimit)))
		for _, p := range n.Problems {
			fmt.Fprintf(w, "    %s\n", esc(p))
		}
	}
	if rec.USPhones > 0 {
		fmt.Fprintf(w, "  %d US recipients (WhatsApp delivers no marketing templates to US numbers)\n", rec.USPhones)
	}
}

// dash is a value the preflight did not read as "-".
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Preflight reads the campaign's record of its last preflight, if any.
func Preflight(s store.Settings) (*PreflightRecord, bool) {
	if len(s.Preflight) == 0 {
		return nil, false
	}
	var rec PreflightRecord
	if json.Unmarshal(s.Preflight, &rec) != nil {
		return nil, false
	}
	return &rec, true
}

// NumberReadError is a sender number whose health could not be read: Err
// is the API's answer (an *whatsapp.APIError), or why the API could not
// be reached.
type NumberReadError struct {
	ID  string
	Err error
}

func (e *NumberReadError) Error() string { return fmt.Sprintf("preflight: sender %s: %v", e.ID, e.Err) }
func (e *NumberReadError) Unwrap() error { return e.Err }

// BlockedError is a campaign whose numbers Meta blocks from sending.
type BlockedError struct{ Reasons []string }

func (e *BlockedError) Error() string { return "preflight: " + strings.Join(e.Reasons, "; ") }

// Hint says where each reason is fixed.
func (e *BlockedError) Hint() string {
	return "Meta blocks sending: each reason names what it is about (the number, the business account, the business) and what fixes it, in WhatsApp Manager or Business Manager (billing, verification, Account Quality); fix it and run the same command again (the campaign keeps its numbers); nothing was sent"
}

// Preflight reads each sender number's health, quality, throughput level
// and messaging limit: before the first send, again while the last read
// found one BLOCKED, and in every dry run; against a sandbox of its own
// with Options.Sandbox. The record is kept unless c.ReadOnly.
func (ch *Channel) Preflight(ctx context.Context, c *run.Campaign) error {
	o := &ch.o
	if o.NoPreflight || !(c.DryRun() || needsPreflight(ctx, c.Store, c.Settings)) {
		return nil
	}
	cl := ch.reader()
	if o.Sandbox {
		sb := sandbox.New(DemoSandbox())
		srv, err := listen.Loopback(sb, listen.Sandbox(sb.LongestHold()), o.Log.With("listener", "sandbox"))
		if err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
		defer func() { srv.Close(); sb.Close() }() // no webhooks: nothing to write, no error
		cl.BaseURL, cl.Token = "http://"+srv.Addr().String(), "sandbox-token"
	} else if o.Token == "" {
		o.Log.Warn("no access token: the sender numbers' health and limits were not read")
		return nil
	}
	rec, err := ch.preflight(ctx, cl, c.Store, &c.Settings)
	if rec != nil && !c.ReadOnly {
		b, merr := json.Marshal(rec)
		if merr == nil {
			c.Settings.Preflight = b
			merr = c.SaveSettings(ctx)
		}
		if err == nil {
			err = merr
		}
	}
	return err
}

// preflight reads the numbers: it refuses a BLOCKED number (with Meta's
// reasons), warns on LIMITED, and says what the campaign meets: the
// portfolio's messaging limit, a rate the number's level does not allow
// (or would allow higher), US recipients of a marketing template. It
// never changes the rate.
func (ch *Channel) preflight(ctx context.Context, cl *whatsapp.Client, st *store.Store, s *store.Settings) (*PreflightRecord, error) {
	log := ch.o.Log
	senders, err := st.Senders(ctx)
	if err != nil {
		return nil, err
	}
	counts, err := st.Counts(ctx)
	if err != nil {
		return nil, err
	}
	rec := &PreflightRecord{At: time.Now().UTC(), UniquePhones: counts.Pending}
	var blocked []string
	limit, unlimited := 0, false
	for _, id := range senders {
		pn, err := cl.PhoneNumber(ctx, id)
		if err != nil {
			return nil, &NumberReadError{ID: id, Err: err}
		}
		n := NumberRecord{ID: id, Display: pn.DisplayPhoneNumber, Health: pn.Health.CanSendMessage, Quality: pn.QualityRating,
			Throughput: pn.Throughput.Level, MessagingLimit: pn.MessagingLimit}
		for _, e := range pn.Health.Entities {
			for _, he := range e.Errors {
				p := fmt.Sprintf("%s %s: (#%d) %s", strings.ToLower(e.EntityType), e.ID, he.ErrorCode, he.ErrorDescription)
				if he.PossibleSolution != "" {
					p += " — " + he.PossibleSolution
				}
				n.Problems = append(n.Problems, p)
			}
		}
		rec.Numbers = append(rec.Numbers, n)
		switch strings.ToUpper(n.Health) {
		case "BLOCKED":
			blocked = append(blocked, fmt.Sprintf("number %s (%s) is BLOCKED: %s", id, n.Display, strings.Join(orNone(n.Problems), "; ")))
		case "LIMITED":
			log.Warn("the sender number can send only in part (health LIMITED)", "number", id, "display", n.Display, "problems", strings.Join(orNone(n.Problems), "; "))
		}
		if rate, ok := whatsapp.ThroughputRate(n.Throughput); ok {
			switch {
			case s.Rate > rate:
				log.Warn("{rate} is above the number's throughput level: expect throttling", "number", id, "level", n.Throughput, "allows_per_second", rate, "rate", s.Rate)
			case s.Rate > 0 && s.Rate < rate:
				log.Info("the number's throughput level allows a higher {rate} (bulksend never raises it by itself)", "number", id, "level", n.Throughput, "allows_per_second", rate, "rate", s.Rate)
			}
		}
		if users, unl, ok := whatsapp.MessagingLimit(n.MessagingLimit); ok {
			// The portfolio's limit is shared by all its numbers: the largest seen is it.
			limit, unlimited = max(limit, users), unlimited || unl
		}
	}
	if len(blocked) > 0 {
		return rec, &BlockedError{Reasons: blocked}
	}
	if !unlimited && limit > 0 && rec.UniquePhones > int64(limit) {
		days := int(math.Ceil(float64(rec.UniquePhones) / float64(limit)))
		log.Warn(fmt.Sprintf("the campaign has %d unique phones and the business portfolio may message %d unique users in any 24 hours: it needs at least %d days at that limit (Meta documents no error for going over; send it in parts)", rec.UniquePhones, limit, days),
			"unique_phones", rec.UniquePhones, "messaging_limit", limit, "days", days)
	}
	if strings.EqualFold(s.Category, "marketing") || s.Category == "" {
		us, err := countUS(ctx, st)
		if err != nil {
			return nil, err
		}
		rec.USPhones = us
		switch {
		case us > 0 && s.Category != "":
			log.Warn("WhatsApp delivers no marketing templates to US numbers (since April 2025): these rows will fail", "us_phones", us)
		case us > 0:
			log.Warn("if this template is a marketing one, its US recipients will not get it: WhatsApp delivers no marketing templates to US numbers (pass {waba} so bulksend knows the category)", "us_phones", us)
		}
	}
	return rec, nil
}

// needsPreflight: a campaign reads its numbers before its first send, and
// again while the last read found one BLOCKED. A campaign that has sent
// (its first run skipped the preflight, or predates it) is not stopped
// halfway by a read it did not start with.
func needsPreflight(ctx context.Context, st *store.Store, s store.Settings) bool {
	if c, err := st.Counts(ctx); err == nil && c.Sending+c.InDoubt+c.Sent+c.Delivered+c.Read+c.Failed > 0 {
		return false
	}
	rec, ok := Preflight(s)
	if !ok {
		return true
	}
	for _, n := range rec.Numbers {
		if strings.EqualFold(n.Health, "BLOCKED") {
			return true
		}
	}
	return false
}

func orNone(ps []string) []string {
	if len(ps) == 0 {
		return []string{"Meta gave no reason"}
	}
	return ps
}

// countUS counts the rows to send whose phone is a US number. Only +1
// numbers are parsed: the area code tells the US from Canada and the
// Caribbean.
func countUS(ctx context.Context, st *store.Store) (int64, error) {
	var n int64
	err := st.EachToSend(ctx, func(phone string) error {
		if strings.HasPrefix(phone, "+1") && csvin.Region(phone) == "US" {
			n++
		}
		return nil
	})
	return n, err
}

var _ run.Budgeter = (*Channel)(nil)

// BudgetKey: Meta's messaging limit belongs to the business portfolio,
// shared by all its numbers. bulksend knows the WhatsApp Business Account
// (one portfolio may own several: give them one --daily-limit each, or
// less), else only the number.
func (c *Channel) BudgetKey(s store.Settings, sender string) string {
	if s.WABA != "" {
		return "whatsapp:waba:" + s.WABA
	}
	return "whatsapp:number:" + sender
}

// DailyLimit is the portfolio's messaging limit as the last preflight
// read it: the largest any number reported.
func (c *Channel) DailyLimit(s store.Settings) (users int, unlimited, ok bool) {
	rec, found := Preflight(s)
	if !found {
		return 0, false, false
	}
	for _, n := range rec.Numbers {
		if u, unl, known := whatsapp.MessagingLimit(n.MessagingLimit); known {
			users, unlimited, ok = max(users, u), unlimited || unl, true
		}
	}
	return users, unlimited, ok
}

var _ run.Marketer = (*Channel)(nil)

// Marketing: a marketing template, or one whose category is unknown (the
// template was not read: an opt-out of marketing is honoured when in
// doubt), or any send through the Marketing Messages API.
func (c *Channel) Marketing(s store.Settings) bool {
	return s.Category == "" || strings.EqualFold(s.Category, "marketing") || s.API == "marketing"
}
