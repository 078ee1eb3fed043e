package smsevent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/bulksend/bulksend/internal/campaign"
)

// maxFuzz bounds fuzz inputs: the mutator grows them towards 100 MB, which
// takes seconds an input (one byte at a time) and finds nothing new.
const maxFuzz = 64 << 10

// FuzzReader feeds arbitrary logs to a Reader. For any input it must not
// panic; its counts must add up (Records == Events + NotEvent + Invalid,
// Events the number of events returned, the first invalid lines in order
// and within the log); every status Statuses gives must have a message ID
// and a status reconcile knows; reading a byte at a time into the smallest
// buffer must not change what is read, and with a limit of 64 bytes on
// records the counts must still add up. Two properties then tie the
// finding of records to the decoder:
//
//   - forms: the lines of the input that are one JSON object each, written
//     as JSON lines, concatenated, as a JSON array and as a CloudWatch
//     export, read as the same records with the same events, at the lines
//     the Reader's doc says;
//   - recovery: whatever text comes before it, an event on a line of its
//     own is read, at its line.
func FuzzReader(f *testing.F) {
	// Short seeds: an interesting input is minimized before the fuzzer
	// goes on, and that takes long for long ones.
	recs := []string{e("a"), minimal(`"isFinal":"true"`, `"totalMessagePrice":"0.1"`), voice, sns(e("b")), `{"Type":"SubscriptionConfirmation"}`}
	f.Add([]byte(strings.Join(recs, "\n")))
	f.Add([]byte(strings.Join(recs[:3], "")))
	f.Add([]byte("[" + strings.Join(recs[:3], ",\n") + "]"))
	f.Add([]byte("2026-11-30T10:00:00.490Z " + recs[0] + "\n2026-11-30T10:00:00.490000+00:00 stream " + recs[1] + "\n"))
	f.Add([]byte(pretty("a", "") + pretty("b", "  ") + "\n" + pretty("c", "")[:50] + "\n" + e("d")))
	f.Add([]byte(`{"a":` + "\n" + `{"x":1}` + "\n" + `{"b":` + "\n" + e("c")))
	f.Add([]byte("INFO x\n42\n[1," + e("a") + "]\n" + e("b")[:40] + "\n" + e("c")))
	f.Add([]byte("\xef\xbb\xbf" + e("a") + "\r\n\r\n" + `{"a":[}` + "\n" + voice))
	f.Add([]byte(e("a") + cut(e("b"), `"b"`) + e("c")))
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > maxFuzz {
			t.Skip()
		}
		evs, c := checkReader(t, in) // also a byte at a time
		lines := bytes.Count(in, []byte("\n")) + 1
		if !slices.IsSorted(c.FirstInvalid) || len(c.FirstInvalid) > 0 && (c.FirstInvalid[0] < 1 || c.FirstInvalid[len(c.FirstInvalid)-1] > lines) {
			t.Fatalf("first invalid lines %v of %d", c.FirstInvalid, lines)
		}
		for _, ev := range evs {
			st := ev.status()
			if st.MessageID == "" || !known(st.Status) || (st.Status == string(campaign.Failed)) != (st.ErrorReason != "") ||
				ev.Line < 1 || ev.Line > lines {
				t.Fatalf("event %+v: status %+v", ev, st)
			}
		}

		small := newReader(bytes.NewReader(in), 0, 64)
		if _, c, err := readAll(small); err != nil || c.Records != c.Events+c.NotEvent+c.Invalid {
			t.Fatalf("with a limit of 64 bytes: %v, %+v", err, c)
		}

		checkForms(t, in)
		checkRecovery(t, in)
	})
}

// checkForms is FuzzReader's forms property.
func checkForms(t *testing.T, in []byte) {
	var (
		objs  []string
		want  []Event
		kinds Counts
	)
	for l := range strings.SplitSeq(string(in), "\n") {
		l = strings.Trim(l, " \t\r")
		if !strings.HasPrefix(l, "{") || !json.Valid([]byte(l)) {
			continue
		}
		ev, k := decode([]byte(l), len(objs)+1, 0)
		objs = append(objs, l)
		kinds.Records++
		switch k {
		case kindEvent:
			kinds.Events++
			want = append(want, ev)
		case kindNotEvent:
			kinds.NotEvent++
		case kindInbound:
			kinds.NotEvent++
			kinds.Inbound++
		default:
			kinds.Invalid++
			if len(kinds.FirstInvalid) < keepFirst {
				kinds.FirstInvalid = append(kinds.FirstInvalid, len(objs))
			}
		}
	}
	if len(objs) == 0 {
		return
	}
	onLine1 := func(evs []Event, c Counts) ([]Event, Counts) {
		evs = slices.Clone(evs)
		for i := range evs {
			evs[i].Line = 1
		}
		c.FirstInvalid = slices.Clone(c.FirstInvalid)
		for i := range c.FirstInvalid {
			c.FirstInvalid[i] = 1
		}
		return evs, c
	}
	prefixed := make([]string, len(objs))
	for i, o := range objs {
		prefixed[i] = fmt.Sprintf("2026-11-30T10:00:%02d.490Z %s", i%60, o)
	}
	wantLine1, kindsLine1 := onLine1(want, kinds)
	for _, form := range []struct {
		name   string
		log    string
		want   []Event
		counts Counts
	}{
		{"JSON lines", strings.Join(objs, "\n"), want, kinds},
		{"CloudWatch export", strings.Join(prefixed, "\n") + "\n", want, kinds},
		{"concatenated", strings.Join(objs, ""), wantLine1, kindsLine1},
		{"array", "[" + strings.Join(objs, ",") + "]", wantLine1, kindsLine1},
	} {
		got, c, err := readAll(NewReader(strings.NewReader(form.log)))
		if err != nil || !slices.Equal(got, form.want) || !equalCounts(c, form.counts) {
			t.Fatalf("%s: %v\n%+v %+v\nwant\n%+v %+v", form.name, err, got, c, form.want, form.counts)
		}
	}
}

// checkRecovery is FuzzReader's recovery property.
func checkRecovery(t *testing.T, in []byte) {
	log := string(in) + "\n" + e("recovered") + "\n"
	evs, _, err := readAll(NewReader(strings.NewReader(log)))
	line := bytes.Count(in, []byte("\n")) + 2
	if err != nil || len(evs) == 0 || evs[len(evs)-1].MessageID != "recovered" || evs[len(evs)-1].Line != line {
		t.Fatalf("an event after the input, on line %d, is not read last: %v %+v", line, err, evs)
	}
}
