package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/bulksend/bulksend/internal/version"
)

// TestVersionFlag checks that --version prints the binary's version on
// stdout, as 'version' does (internal/version tests the stamped one).
func TestVersionFlag(t *testing.T) {
	want := version.Current().String()
	for _, args := range [][]string{{"--version"}, {"version"}} {
		var out, errOut bytes.Buffer
		code := runMain(args, &IO{In: strings.NewReader(""), Out: &out, Err: &errOut, Getenv: func(string) string { return "" }})
		if code != ExitOK || errOut.Len() != 0 {
			t.Fatalf("%q: exit %d, stderr %q", args, code, errOut.String())
		}
		if got := out.String(); got != want+"\n" {
			t.Errorf("%q printed %q, want %q", args, got, want)
		}
	}
}
