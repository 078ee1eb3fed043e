package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/bulksend/bulksend/internal/store"
	"github.com/bulksend/bulksend/internal/whatsapp/pricing"
)

// loadRateCard reads Meta's rate card and, when given, its calling-code
// mapping (Meta publishes them as two files).
func loadRateCard(cardPath, codesPath string) (*pricing.Card, error) {
	card, err := os.Open(cardPath)
	if err != nil {
		return nil, usagef("", "--rate-card: %w", err)
	}
	defer card.Close()
	var codes io.Reader
	if codesPath != "" {
		f, err := os.Open(codesPath)
		if err != nil {
			return nil, usagef("", "--calling-codes: %w", err)
		}
		defer f.Close()
		codes = f
	}
	c, err := pricing.Load(card, codes)
	if errors.Is(err, pricing.ErrNoCallingCodes) {
		return nil, usagef("pass Meta's country-calling-code list with --calling-codes FILE", "--rate-card %s: %w", cardPath, err)
	}
	if err != nil {
		return nil, usagef("--rate-card takes Meta's rate-card CSV as published (Market, Currency, Marketing, Utility, Authentication… columns)", "--rate-card %s: %w", cardPath, err)
	}
	return c, nil
}

// printCostCeiling prints what the rows to send would cost if every one
// were delivered and billed (Meta charges delivered templates only, so
// this is a ceiling), per market.
func printCostCeiling(ctx context.Context, w io.Writer, st *store.Store, s store.Settings, card *pricing.Card) error {
	category, note := strings.ToLower(s.Category), ""
	switch {
	case category == "":
		category, note = "marketing", " (category unknown: priced as marketing, the dearest; pass --waba to know it)"
	case s.API == "marketing":
		note = " (marketing_lite is billed at the marketing rate)"
	}
	t := card.NewTally()
	if err := st.EachToSend(ctx, func(phone string) error {
		t.Add(phone, category)
		return nil
	}); err != nil {
		return err
	}
	fmt.Fprintf(w, "cost ceiling: %s for %d messages billed as %s, if every one is delivered%s\n",
		card.Money(t.Total()), t.Priced(), esc(category), note)
	t.WriteLines(w, "  ")
	return nil
}
