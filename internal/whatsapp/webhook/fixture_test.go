package webhook

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bulksend/bulksend/internal/logfile"
	"time"
)

// TestFixtures reads the example logs in testdata/webhook, plain and
// gzipped: NDJSON, an indented JSON array, and pretty-printed bodies one
// after the other.
func TestFixtures(t *testing.T) {
	const (
		wam1 = "wamid.HBgLMTY1MDUwNzY1MjAVAgARGBI5QTNDQTVCM0Q0Q0Q2RTY3RTcA"
		wam2 = "wamid.HBgLMTY1MDUwNzY1MjEVAgARGBJBQjEyQ0QzNEVGNTY3ODkwQUIA"
		wam3 = "wamid.HBgLMTY1MDUwNzY1MjIVAgARGBJDRDM0RUY1Njc4OTBBQjEyQ0QA"
		wam4 = "wamid.HBgLMTY1MDUwNzY1MjMVAgARGBJFRjU2Nzg5MEFCMTJDRDM0RUYA"
		wam5 = "wamid.HBgLMTIwMzYzMjE5NjIVAgARGBJHSDEyMzQ1Njc4OTBBQkNERUYA"
	)
	at := func(sec int64) time.Time { return time.Unix(sec, 0).UTC() }
	group := Pricing{Category: "group_marketing", Type: "regular", Billable: true, HasBillable: true}
	want := []Status{
		{WAMID: wam1, Status: "sent", Timestamp: at(1750030073), RecipientID: "16505551234", CallbackData: "bulksend:01J9ZK3X8W2Q:1", PhoneNumberID: pnid, Pricing: marketing, Line: 1},
		{WAMID: wam1, Status: "delivered", Timestamp: at(1750030075), RecipientID: "16505551234", CallbackData: "bulksend:01J9ZK3X8W2Q:1", PhoneNumberID: pnid, Pricing: marketing, Line: 2},
		{WAMID: wam1, Status: "read", Timestamp: at(1750030190), RecipientID: "16505551234", CallbackData: "bulksend:01J9ZK3X8W2Q:1", PhoneNumberID: pnid, Line: 3},
		{WAMID: wam2, Status: "failed", Timestamp: at(1750030080), RecipientID: "16505551235", CallbackData: "bulksend:01J9ZK3X8W2Q:2", PhoneNumberID: pnid, Line: 4,
			ErrorCode: 131049, ErrorTitle: "This message was not delivered to maintain healthy ecosystem engagement."},
		{WAMID: wam3, Status: "delivered", Timestamp: at(1750030500), RecipientID: "16505551236", CallbackData: "bulksend:01J9ZK3X8W2Q:3", PhoneNumberID: pnid, Pricing: marketing, Line: 8},
		{WAMID: wam4, Status: "read", Timestamp: at(1750030501), RecipientID: "16505551237", CallbackData: "bulksend:01J9ZK3X8W2Q:4", PhoneNumberID: pnid, Line: 8},
		{WAMID: wam5, Status: "sent", Timestamp: at(1750030600), RecipientID: "120363219621234567@g.us", PhoneNumberID: pnid, Pricing: group, Line: 9},
		{WAMID: wam1, Status: "played", Timestamp: at(1750030700), RecipientID: "16505551234", PhoneNumberID: pnid, Line: 10},
	}
	wantCounts := Counts{Lines: 10, Bodies: 7, Statuses: 8, NotStatus: 3, FirstNotStatus: []int{5, 6, 7}}
	// Where each of the ten records starts in the pretty-printed file (in
	// the others, record n is line or element n).
	prettyLines := []int{1, 43, 85, 114, 154, 193, 214, 244, 286, 322}

	dir := t.TempDir()
	var paths []string
	for _, name := range []string{"meta-examples.ndjson", "meta-examples.json", "meta-examples.pretty.json"} {
		src := filepath.Join("..", "..", "..", "testdata", "webhook", name)
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		gzPath := filepath.Join(dir, name+".gz")
		if err := os.WriteFile(gzPath, gz(t, string(b)), 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, src, gzPath)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			want, wantCounts := slices.Clone(want), wantCounts
			if strings.HasPrefix(filepath.Base(path), "meta-examples.pretty.json") {
				for i := range want {
					want[i].Line = prettyLines[want[i].Line-1]
				}
				wantCounts.FirstNotStatus = []int{prettyLines[4], prettyLines[5], prettyLines[6]}
			}
			rc, err := logfile.Open(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			got, c, err := readAll(NewReader(rc))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("statuses:\n got %v\nwant %v", got, want)
			}
			if !equalCounts(c, wantCounts) {
				t.Errorf("counts %+v, want %+v", c, wantCounts)
			}
		})
	}
}
