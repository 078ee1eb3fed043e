package metrics

import (
	"context"
	"io"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/store"
)

// OfCheckpoint are the metrics the checkpoint alone gives: rows by
// state, the last success, the last run's start, end and rate.
func OfCheckpoint(ctx context.Context, st *store.Store, settings store.Settings) (*Metrics, error) {
	channel, err := campaign.ParseChannel(settings.Channel)
	if err != nil {
		return nil, err
	}
	var s State
	if s.Counts, err = st.Counts(ctx); err != nil {
		return nil, err
	}
	if s.LastSuccess, _, err = st.LastSent(ctx); err != nil {
		return nil, err
	}
	runs, err := st.Runs(ctx)
	if err != nil {
		return nil, err
	}
	if len(runs) > 0 {
		last := runs[len(runs)-1]
		s.RunStart, s.RunEnd, s.Senders, s.Rate = last.StartedAt, last.EndedAt, last.Senders, last.Rate
	}
	return FromCheckpoint(settings.CampaignID, string(channel), s), nil
}

// WriteCheckpoint writes what the checkpoint alone says in the text
// exposition format, for a cron job that only wants state.
func WriteCheckpoint(ctx context.Context, w io.Writer, st *store.Store, settings store.Settings) error {
	m, err := OfCheckpoint(ctx, st, settings)
	if err != nil {
		return err
	}
	return m.Write(w)
}
