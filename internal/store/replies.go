package store

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/bulksend/bulksend/internal/campaign"
)

// replyChunk is how many phones one lookup of RecordReplies names: phones
// have no index (see dueIndex), so each lookup walks the table once, for
// a chunk of replies instead of each.
const replyChunk = 500

// replyMax is how much of a reply's text a row keeps: enough to see what
// it said, not a transcript.
const replyMax = 100

// RecordReplies records each reply on the row of the message it answers:
// the row holding its message ID when it names one, else the row last
// sent to its phone at or before it. A row keeps its first reply (the earliest), so a log read
// twice, or out of order, leaves the same rows. It returns how many rows
// took a reply; replies that answer no message of this campaign are left.
func (s *Store) RecordReplies(ctx context.Context, replies []campaign.Reply) (recorded int64, err error) {
	recorded, _, err = s.PlaceReplies(ctx, replies)
	return recorded, err
}

// PlaceReplies is RecordReplies, and also says of each reply whether it
// answers a row of this campaign (placed[i]), whether or not that row
// kept it: a receiver tries the others again, as the reply may have come
// before the run recorded its message.
func (s *Store) PlaceReplies(ctx context.Context, replies []campaign.Reply) (recorded int64, placed []bool, err error) {
	defer mark(&err)
	placed = make([]bool, len(replies))
	for i := 0; i < len(replies); i += replyChunk {
		end := min(len(replies), i+replyChunk)
		n, err := s.recordReplies(ctx, replies[i:end], placed[i:end])
		recorded += n
		if err != nil {
			return recorded, placed, err
		}
	}
	return recorded, placed, nil
}

type replyRow struct {
	row, sentAt, repliedAt int64
	wamid                  string
}

func (s *Store) recordReplies(ctx context.Context, replies []campaign.Reply, placed []bool) (int64, error) {
	phones := map[string]bool{}
	ids := map[string]bool{}
	for _, r := range replies {
		phones[r.Phone] = true
		if r.MessageID != "" {
			ids[r.MessageID] = true
		}
	}
	args := make([]any, 0, len(phones)+len(ids))
	for p := range phones {
		args = append(args, p)
	}
	for id := range ids {
		args = append(args, id)
	}
	q := `SELECT row, phone, COALESCE(wamid, ''), COALESCE(sent_at, 0), COALESCE(replied_at, 0) FROM recipients
		WHERE sent_at IS NOT NULL AND (phone IN (` + placeholders(len(phones)) + `)`
	if len(ids) > 0 {
		q += ` OR wamid IN (` + placeholders(len(ids)) + `)`
	}
	rs, err := s.db.QueryContext(ctx, q+`)`, args...)
	if err != nil {
		return 0, fmt.Errorf("find the rows replied to: %w", err)
	}
	byPhone := map[string][]replyRow{}
	byID := map[string]string{} // message ID → phone
	for rs.Next() {
		var r replyRow
		var phone string
		if err := rs.Scan(&r.row, &phone, &r.wamid, &r.sentAt, &r.repliedAt); err != nil {
			rs.Close()
			return 0, fmt.Errorf("find the rows replied to: %w", err)
		}
		byPhone[phone] = append(byPhone[phone], r)
		if r.wamid != "" {
			byID[r.wamid] = phone
		}
	}
	if err := rs.Close(); err != nil {
		return 0, fmt.Errorf("find the rows replied to: %w", err)
	}
	if err := rs.Err(); err != nil {
		return 0, fmt.Errorf("find the rows replied to: %w", err)
	}
	// Each row's earliest reply, of those given and the one it holds.
	type first struct {
		at   int64
		text string
	}
	take := map[int64]first{}
	for i, r := range replies {
		at := r.At.UnixMilli()
		row, ok := answered(byPhone, byID, r, at)
		if !ok {
			continue
		}
		placed[i] = true
		if f, seen := take[row.row]; (seen && f.at <= at) || (row.repliedAt != 0 && row.repliedAt <= at) {
			continue
		}
		take[row.row] = first{at, clip(r.Text)}
	}
	if len(take) == 0 {
		return 0, nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("record replies: %w", err)
	}
	defer tx.Rollback()
	up, err := tx.PrepareContext(ctx, `UPDATE recipients SET replied_at = ?2, reply = ?3 WHERE row = ?1 AND (replied_at IS NULL OR replied_at > ?2)`)
	if err != nil {
		return 0, fmt.Errorf("record replies: %w", err)
	}
	defer up.Close()
	var n int64
	for row, f := range take {
		res, err := up.ExecContext(ctx, row, f.at, f.text)
		if err != nil {
			return 0, fmt.Errorf("record reply of row %d: %w", row, err)
		}
		c, _ := res.RowsAffected()
		n += c
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("record replies: %w", err)
	}
	return n, nil
}

// answered is the row r answers: the one holding its message ID, when it
// names one (a message of another campaign answers none of this one);
// else the one last sent to its phone at or before it.
func answered(byPhone map[string][]replyRow, byID map[string]string, r campaign.Reply, at int64) (replyRow, bool) {
	if r.MessageID != "" {
		for _, row := range byPhone[byID[r.MessageID]] {
			if row.wamid == r.MessageID {
				return row, true
			}
		}
		return replyRow{}, false
	}
	// Webhooks give whole seconds: a reply in the second a message left
	// may be stamped before it.
	at += 999
	var best replyRow
	found := false
	for _, row := range byPhone[r.Phone] {
		if row.sentAt <= at && (!found || row.sentAt > best.sentAt) {
			best, found = row, true
		}
	}
	return best, found
}

// clip is text cut to replyMax bytes on a character boundary.
func clip(text string) string {
	if len(text) <= replyMax {
		return text
	}
	cut := replyMax
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + "…"
}

func placeholders(n int) string { return strings.TrimSuffix(strings.Repeat("?,", n), ",") }

// Replied counts the rows that took a reply.
func (s *Store) Replied(ctx context.Context) (n int64, err error) {
	defer mark(&err)
	if err := s.q.QueryRowContext(ctx, `SELECT COUNT(*) FROM recipients WHERE replied_at IS NOT NULL`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count replies: %w", err)
	}
	return n, nil
}
