package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/bulksend/bulksend/internal/run"
	wachannel "github.com/bulksend/bulksend/internal/whatsapp/channel"
	"github.com/bulksend/bulksend/internal/whatsapp/template"
)

// Packages below the command line log settings as {rate}: the operator's
// log says --rate, in both formats, and leaves the attributes alone.
func TestLogNamesFlags(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		var buf bytes.Buffer
		log, err := newLogger(&buf, "info", format)
		if err != nil {
			t.Fatal(err)
		}
		log.With("run", "x").Warn("pass {rate} 40; {{text}} stays", "why", "{rate}")
		got := buf.String()
		if !strings.Contains(got, "pass --rate 40; {{text}} stays") || !strings.Contains(got, "{rate}") {
			t.Errorf("%s log = %q, want the message's {rate} as --rate and the attribute's kept", format, got)
		}
	}
}

// The errors of the packages below the command line that name settings,
// in the operator's words: the flags.
func TestWordsNameFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"a template's problems", whatsappWords(&wachannel.MismatchError{Where: "the template", Problems: template.Problems{"{param} header.image: is not a link", "leave the column out with {ignore-column} \"x\"; {{text}} has no column"}}),
			"the CSV does not fit the template: 2 problems:\n  - --param header.image: is not a link\n  - leave the column out with --ignore-column \"x\"; {{text}} has no column"},
		{"a list setting changed", whatsappEntry.words(nil, &run.ChangedError{Setting: "param", Was: run.List([]string{"a=1", "b=2"}), Now: run.List([]string{"a=1"})}),
			`--param "a=1" differs from this campaign's "a=1 --param b=2": it cannot change once sending started`},
		{"a setting changed", whatsappEntry.words(nil, &run.ChangedError{Setting: "template", Was: "welcome", Now: "other"}),
			`--template "other" differs from this campaign's "welcome": it cannot change once sending started`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var usage *usageError
			if !errors.As(tc.err, &usage) || tc.err.Error() != tc.want {
				t.Errorf("err = %q (%T), want the usage error %q", tc.err, tc.err, tc.want)
			}
		})
	}
}
