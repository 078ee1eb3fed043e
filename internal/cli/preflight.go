package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/bulksend/bulksend/internal/store"
	wachannel "github.com/bulksend/bulksend/internal/whatsapp/channel"
)

// printPreflight is status's account of the last preflight.
func printPreflight(w io.Writer, s store.Settings) {
	rec, ok := wachannel.Preflight(s)
	if !ok {
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
