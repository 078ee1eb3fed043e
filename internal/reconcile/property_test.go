package reconcile_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/reconcile"
	"github.com/bulksend/bulksend/internal/whatsapp/webhook"
)

var kinds = []string{"sent", "delivered", "read", "failed", "deleted"}

// TestPermutations applies random permutations of random statuses to
// random checkpoints, in random batch sizes, and requires the same end
// state every time, and nothing changed by a second run.
//
// A status without our callback data is only generated for a message
// whose wamid the checkpoint holds from the start and that no status of
// another wamid of its row can replace (see the package doc).
func TestPermutations(t *testing.T) {
	const nRows = 15
	for round := range 12 {
		r := rand.New(rand.NewPCG(uint64(round), 99))
		rows := make([]seed, nRows)
		var log []webhook.Status
		for i := range rows {
			row := int64(i + 1)
			own := fmt.Sprintf("wamid.%d.a", row)
			switch r.IntN(7) {
			case 0:
				rows[i] = pending()
			case 1:
				rows[i] = skipped()
			case 2:
				rows[i] = failedRow(131026, "Message undeliverable")
			case 3:
				rows[i] = sentRow(own, float64(r.IntN(20)))
			case 4:
				rows[i] = seed{attempts: 1, s: state{Status: campaign.Failed, WAMID: own, Code: 131049, Title: ecosystem}}
			default:
				rows[i] = inDoubt(at(float64(-r.IntN(3))*3600), 1+r.IntN(3))
			}
			stored := rows[i].s.WAMID != ""
			twice := !stored && r.IntN(3) == 0 // a row that went out twice
			for range r.IntN(7) {
				w := own
				if twice && r.IntN(2) == 0 {
					w = fmt.Sprintf("wamid.%d.b", row)
				}
				s := status(kinds[r.IntN(len(kinds))], w, float64(r.IntN(30)), row)
				if s.Status == "failed" {
					s = withError(s, []int{0, 131026, 131049}[r.IntN(3)], "t")
				}
				if stored && r.IntN(3) == 0 {
					s.CallbackData = ""
				}
				log = append(log, s, s) // every status twice: duplicates are normal
			}
		}
		log = append(log, status("read", "wamid.foreign", 3, 0), withCallback(status("read", "wamid.1.a", 3, 0), campaign.Ref{Campaign: "autumn", Row: 1}.String()))

		var first []string
		for perm := range 6 {
			l := slices.Clone(log)
			r.Shuffle(len(l), func(i, j int) { l[i], l[j] = l[j], l[i] })
			opt := reconcile.Options{Batch: 1 + r.IntN(8), Unmatched: campaign.Fail, Grace: 90 * time.Minute, Now: func() time.Time { return at(0) }}
			st := checkpoint(t, rows)
			applyLog(t, st, ndjson(l...), opt)
			got := full(t, st, nRows)
			if perm == 0 {
				first = got
			} else if !slices.Equal(got, first) {
				t.Fatalf("round %d permutation %d (batch %d): end state differs:\n%q\n%q", round, perm, opt.Batch, first, got)
			}
			if again := applyLog(t, st, ndjson(l...), opt); again.Changed != 0 || again.Applied != 0 {
				t.Fatalf("round %d permutation %d: second run changed %d rows, applied %d", round, perm, again.Changed, again.Applied)
			}
		}
	}
}
