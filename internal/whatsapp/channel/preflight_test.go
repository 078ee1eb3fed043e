package channel

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/bulksend/bulksend/internal/store"
)

// TestProvenNumbers: the senders a run need not hold for a proof are
// those whose throughput level, as the last preflight read it, allows
// more than the standard 80/s.
func TestProvenNumbers(t *testing.T) {
	rec := PreflightRecord{Numbers: []NumberRecord{
		{ID: "1", Throughput: "HIGH"}, {ID: "2", Throughput: "STANDARD"}, {ID: "3", Throughput: "NOT_APPLICABLE"}, {ID: "4"}, {ID: "5", Throughput: "HIGH"},
	}}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if got := provenNumbers(store.Settings{Preflight: b}); !slices.Equal(got, []string{"1", "5"}) {
		t.Errorf("proven %v, want [1 5]", got)
	}
	if got := provenNumbers(store.Settings{}); got != nil {
		t.Errorf("no preflight: proven %v", got)
	}
}
