package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/bulksend/bulksend/internal/csvin"
	"github.com/bulksend/bulksend/internal/store"
	"github.com/bulksend/bulksend/internal/whatsapp"
	"github.com/bulksend/bulksend/internal/whatsapp/sandbox"
)

// preflightRecord is what a preflight read of the sender numbers found; it
// is kept in the checkpoint's settings and shown by status.
type preflightRecord struct {
	At           time.Time      `json:"at"`
	Numbers      []numberRecord `json:"numbers"`
	UniquePhones int64          `json:"unique_phones"`
	USPhones     int64          `json:"us_phones"`
}

type numberRecord struct {
	ID             string   `json:"id"`
	Display        string   `json:"display_phone_number,omitempty"`
	Health         string   `json:"can_send_message,omitempty"`
	Quality        string   `json:"quality_rating,omitempty"`
	Throughput     string   `json:"throughput_level,omitempty"`
	MessagingLimit string   `json:"messaging_limit,omitempty"`
	Problems       []string `json:"problems,omitempty"` // Meta's health errors
}

// preflight reads each sender number's health, quality, throughput level
// and messaging limit before the first send: it refuses a BLOCKED number
// (exit 1, with Meta's reasons), warns on LIMITED, and says what the
// campaign meets: the portfolio's messaging limit, a --rate the number's
// level does not allow (or would allow higher), US recipients of a
// marketing template. It never changes --rate.
func (o *runOptions) preflight(ctx context.Context, c *whatsapp.Client, st *store.Store, s *store.Settings) (*preflightRecord, error) {
	senders, err := st.Senders(ctx)
	if err != nil {
		return nil, err
	}
	counts, err := st.Counts(ctx)
	if err != nil {
		return nil, err
	}
	rec := &preflightRecord{At: time.Now().UTC(), UniquePhones: counts.Pending}
	var blocked []string
	limit, unlimited := 0, false
	for _, id := range senders {
		pn, err := c.PhoneNumber(ctx, id)
		if err != nil {
			var api *whatsapp.APIError
			if errors.As(err, &api) && api.Code == 100 {
				return nil, &hintError{err: fmt.Errorf("preflight: sender %s: %w", id, err), hint: "check --from (or the from column): it takes phone-number IDs as WhatsApp Manager shows them; or skip this check with --no-preflight"}
			}
			if errors.As(err, &api) {
				return nil, fmt.Errorf("preflight: sender %s: %w", id, err)
			}
			return nil, &hintError{err: fmt.Errorf("preflight: sender %s: %w", id, err), hint: "the API could not be reached to read the sender number: check the network and --api-url; or skip this check with --no-preflight"}
		}
		n := numberRecord{ID: id, Display: pn.DisplayPhoneNumber, Health: pn.Health.CanSendMessage, Quality: pn.QualityRating,
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
			o.log.Warn("the sender number can send only in part (health LIMITED)", "number", id, "display", n.Display, "problems", strings.Join(orNone(n.Problems), "; "))
		}
		if rate, ok := whatsapp.ThroughputRate(n.Throughput); ok {
			switch {
			case s.Rate > rate:
				o.log.Warn("--rate is above the number's throughput level: expect throttling", "number", id, "level", n.Throughput, "allows_per_second", rate, "rate", s.Rate)
			case s.Rate > 0 && s.Rate < rate:
				o.log.Info("the number's throughput level allows a higher --rate (bulksend never raises it by itself)", "number", id, "level", n.Throughput, "allows_per_second", rate, "rate", s.Rate)
			}
		}
		if users, unl, ok := whatsapp.MessagingLimit(n.MessagingLimit); ok {
			// The portfolio's limit is shared by all its numbers: the largest seen is it.
			limit, unlimited = max(limit, users), unlimited || unl
		}
	}
	if len(blocked) > 0 {
		return rec, &hintError{
			err:  fmt.Errorf("preflight: %s", strings.Join(blocked, "; ")),
			hint: "Meta blocks sending: each reason names what it is about (the number, the business account, the business) and what fixes it, in WhatsApp Manager or Business Manager (billing, verification, Account Quality); fix it and run the same command again (the campaign keeps its numbers); nothing was sent",
		}
	}
	if !unlimited && limit > 0 && rec.UniquePhones > int64(limit) {
		days := int(math.Ceil(float64(rec.UniquePhones) / float64(limit)))
		o.log.Warn(fmt.Sprintf("the campaign has %d unique phones and the business portfolio may message %d unique users in any 24 hours: it needs at least %d days at that limit (Meta documents no error for going over; send it in parts)", rec.UniquePhones, limit, days),
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
			o.log.Warn("WhatsApp delivers no marketing templates to US numbers (since April 2025): these rows will fail", "us_phones", us)
		case us > 0:
			o.log.Warn("if this template is a marketing one, its US recipients will not get it: WhatsApp delivers no marketing templates to US numbers (pass --waba so bulksend knows the category)", "us_phones", us)
		}
	}
	return rec, nil
}

// needsPreflight: a campaign reads its numbers before its first send, and
// again while the last read found one BLOCKED. A campaign that has sent
// (its first run had --no-preflight, or predates the preflight) is not
// stopped halfway by a read it did not start with.
func needsPreflight(ctx context.Context, st *store.Store, s store.Settings) bool {
	if c, err := st.Counts(ctx); err == nil && c.Sending+c.InDoubt+c.Sent+c.Delivered+c.Read+c.Failed > 0 {
		return false
	}
	if len(s.Preflight) == 0 {
		return true
	}
	var rec preflightRecord
	if json.Unmarshal(s.Preflight, &rec) != nil {
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

// savePreflight keeps what the preflight read in the checkpoint.
func savePreflight(ctx context.Context, st *store.Store, s *store.Settings, rec *preflightRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	s.Preflight = b
	_, err = st.SaveSettings(ctx, *s)
	return err
}

// printPreflight is status's account of the last preflight.
func printPreflight(w io.Writer, s store.Settings) {
	if len(s.Preflight) == 0 {
		return
	}
	var rec preflightRecord
	if json.Unmarshal(s.Preflight, &rec) != nil {
		return
	}
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

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// runPreflight runs the preflight unless --no-preflight, against Meta or,
// with --sandbox, against a sandbox of its own; save keeps its record.
func (o *runOptions) runPreflight(ctx context.Context, ios *IO, st *store.Store, s *store.Settings, token string, save bool) error {
	if o.noPreflight {
		return nil
	}
	c := &whatsapp.Client{BaseURL: o.apiBase(ios), Version: o.apiVersion, Token: token, Timeout: o.readTimeout(), HTTP: whatsapp.NewHTTPClient(1)}
	if o.sandbox {
		url, stop, err := serveLocal(sandbox.New(demoSandbox()))
		if err != nil {
			return err
		}
		defer stop() // no webhooks: nothing to write, no error
		c.BaseURL, c.Token = url, "sandbox-token"
	} else if token == "" {
		o.log.Warn("no access token: the sender numbers' health and limits were not read")
		return nil
	}
	rec, err := o.preflight(ctx, c, st, s)
	if rec != nil && save {
		if serr := savePreflight(ctx, st, s, rec); err == nil {
			err = serr
		}
	}
	return err
}
