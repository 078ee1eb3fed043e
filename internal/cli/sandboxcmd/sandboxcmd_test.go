package sandboxcmd

import (
	"errors"
	"testing"

	"github.com/bulksend/bulksend/internal/cli/cmdutil"
	"github.com/bulksend/bulksend/internal/whatsapp/sandbox"
)

// TestWordsNameFlags: the sandbox's settings it cannot take, in the
// operator's words: the flags, as usage errors.
func TestWordsNameFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"a rate", words(sandbox.Config{ReadRate: 1.5}.Validate()), "invalid --read-rate 1.5: want a fraction from 0 to 1"},
		{"a number", words((&sandbox.Config{}).Apply(sandbox.Specs{Numbers: []string{"1:colour=red"}})), `invalid --number "1:colour=red": unknown key "colour"`},
		{"a number rate", words((&sandbox.Config{}).Apply(sandbox.Specs{NumberRates: []string{"1=fast"}})), `invalid --number-rate "1=fast"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var usage *cmdutil.UsageError
			if !errors.As(tc.err, &usage) || tc.err.Error() != tc.want {
				t.Errorf("err = %q (%T), want the usage error %q", tc.err, tc.err, tc.want)
			}
		})
	}
}
