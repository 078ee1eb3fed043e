package run

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/fnv"
	"io"
	"os"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/csvin"
	"github.com/bulksend/bulksend/internal/store"
)

// CSVError is a campaign file that cannot be read, named: its own error
// (a *csvin.LineError names the line) is wrapped.
type CSVError struct {
	Path string
	Err  error
}

func (e *CSVError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *CSVError) Unwrap() error { return e.Err }

// importCSV imports the CSV into the checkpoint as the campaign's rows,
// bound to the channel's message, and returns the settings the first run
// fixes.
func (c *Campaign) importCSV(ctx context.Context) (store.Settings, error) {
	o := &c.opts
	f, err := os.Open(o.CSV)
	if err != nil {
		return store.Settings{}, &CSVError{Path: o.CSV, Err: err}
	}
	defer f.Close()
	h := sha256.New()
	counter := &countingWriter{w: h}
	rd, err := csvin.NewReader(bufio.NewReaderSize(io.TeeReader(f, counter), 1<<16), csvin.Options{
		DefaultRegion: o.Region, PhoneColumn: o.PhoneColumn, Delimiter: o.Delimiter,
	})
	if err != nil {
		return store.Settings{}, &CSVError{Path: o.CSV, Err: err}
	}
	if !rd.HasFrom() && len(o.From) == 0 {
		return store.Settings{}, ErrNoSender
	}
	b, err := c.ch.Bind(ctx, rd.Params())
	if err != nil {
		return store.Settings{}, err
	}
	c.bound = b
	var s store.Settings
	b.Pin(&s)
	id, err := newCampaignID()
	if err != nil {
		return store.Settings{}, err
	}
	s.CampaignID, s.Senders, s.Rate = id, o.From, o.Rate
	s.Concurrency, s.MaxAttempts, s.DefaultRegion = o.Concurrency, o.MaxAttempts, o.Region
	s.Params, s.PhoneColumn, s.Delimiter = rd.Params(), o.PhoneColumn, DelimiterName(rd.Delimiter())
	s.Encoding, s.CreatedAt = rd.Encoding(), time.Now().UTC()
	pinSchedule(&s, o.Schedule)
	s.Scope = o.LedgerScope
	s.SendAtColumn = rd.HasSendAt()
	z, err := newZoner(s)
	if err != nil {
		return store.Settings{}, err
	}
	mem := limitImportMemory()
	defer mem.restore()
	var row int64
	// One Row, filled in place for every record: a Row made per record
	// went to the heap (the binding's Row takes its address), 200 MB of
	// garbage for a million rows.
	var r store.Row
	next := func() (store.Row, error) {
		rec, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return store.Row{}, err
		}
		if err != nil {
			return store.Row{}, &CSVError{Path: o.CSV, Err: err}
		}
		row++
		mem.rows(row)
		c.row(&r, row, rec)
		if rec.SendAt != "" || z.need {
			if err := z.place(&r, rec.SendAt); err != nil {
				return store.Row{}, &CSVError{Path: o.CSV, Err: &csvin.LineError{Line: rec.Line, Err: err}}
			}
		}
		return r, nil
	}
	start := time.Now()
	n, err := c.Store.Import(ctx, next, func() store.Settings {
		s.CSVHash, s.CSVSize = hex.EncodeToString(h.Sum(nil)), counter.n
		s.ApostrophesRemoved = rd.Notes().ApostrophesRemoved
		return s
	})
	if err != nil {
		return s, err
	}
	o.Log.Info("imported", "rows", n, "took", time.Since(start).Round(time.Millisecond), "checkpoint", c.Store.Path(),
		"delimiter", s.Delimiter, "encoding", s.Encoding)
	if s.ApostrophesRemoved > 0 {
		o.Log.Info("removed a leading apostrophe (a spreadsheet's text marker) from phones", "rows", s.ApostrophesRemoved)
	}
	return s, nil
}

// row makes r CSV record rec as the row-th recipient: an invalid phone,
// a from cell that is not one of the channel's senders, or no sender at
// all skip it; else the binding checks and measures its cells.
func (c *Campaign) row(r *store.Row, row int64, rec csvin.Record) {
	*r = store.Row{Row: row, Line: rec.Line, ExtID: rec.ID, Phone: rec.Phone, Params: rec.Params, Sender: rec.From}
	if rec.Invalid != "" {
		r.Phone, r.Skip, r.SkipKind = rec.RawPhone, rec.Invalid, campaign.SkipInvalid
	}
	if r.Sender != "" && r.Skip == "" {
		if err := c.ch.CheckSender(r.Sender); err != nil {
			r.Skip, r.SkipKind = "no sender: the from column holds "+err.Error(), campaign.SkipNoSender
		}
	}
	if r.Sender == "" {
		r.Sender = Assign(r.Phone, c.opts.From)
	}
	if r.Sender == "" && r.Skip == "" {
		r.Skip, r.SkipKind = "no sender: the from column is empty and no --from was given", campaign.SkipNoSender
	}
	if r.Skip == "" {
		c.bound.Row(r, rec.Params)
		c.severalParts = c.severalParts || r.Parts > 1
	}
}

// Assign picks a sender for phone: a stable hash, so that a recipient
// keeps its sender across runs and machines.
func Assign(phone string, senders []string) string {
	if len(senders) == 0 {
		return ""
	}
	h := fnv.New32a()
	h.Write([]byte(phone))
	return senders[h.Sum32()%uint32(len(senders))]
}

type countingWriter struct {
	w hash.Hash
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return c.w.Write(p)
}

func hashFile(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, &CSVError{Path: path, Err: err}
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

func newCampaignID() (string, error) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
