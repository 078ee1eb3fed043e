package cli

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bulksend/bulksend/internal/redact"
	"github.com/bulksend/bulksend/internal/store"
	"github.com/bulksend/bulksend/internal/whatsapp/sandbox"
)

// TestLogsKeepSecrets: a campaign with every kind of trouble (throttles,
// transient and permanent errors, answers that never come, a suppression
// list with unusable lines, a resume, a refused token) never writes the
// access token to stderr, even at debug level; at info level it writes no
// recipient's full phone, only its last four digits, whether written in
// E.164, without its '+', national or formatted.
func TestLogsKeepSecrets(t *testing.T) {
	const token, wrongToken = "EAAGtestSECRETtoken0123456789", "EAAGwrongSECRETtoken987654321"
	for _, tc := range []struct {
		name   string
		flags  []string
		phones bool // full phones are allowed (debug level)
	}{
		// Both handlers; redact's own tests take each through both levels.
		{"debug text", []string{"--log-level", "debug"}, true},
		{"info json", []string{"--log-format", "json"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			csv, phones := writeCampaign(t, dir, 150)
			// Lines of the suppression list that --default-region GB
			// cannot use, each logged with its text: the first recipient
			// written without its '+' (csvin's error for it suggests the
			// full number), a national number and a formatted one.
			unusable := []string{strings.TrimPrefix(phones[0], "+"), "07700 900123", "+1 (201) 555-0101x"}
			exclude := filepath.Join(dir, "exclude.txt")
			if err := os.WriteFile(exclude, []byte(strings.Join(unusable, "\n")+"\n"+phones[1]+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			url := serveSandbox(t, sandbox.Config{Seed: 5, Rate: 40, Token: token, PairInterval: -1, Latency: 5 * time.Millisecond,
				TransientRate: 0.05, PermanentRate: 0.05, LateRate: 0.06, LateDelay: 5 * time.Second})
			env := map[string]string{"WHATSAPP_TOKEN": token, "BULKSEND_API_URL": url}
			var stderr strings.Builder
			runCLI := func(env map[string]string, want []int, args ...string) {
				t.Helper()
				p := startCLI(t, env, append(args, tc.flags...)...)
				code := p.wait(t)
				stderr.WriteString(p.stderr.String())
				if !slices.Contains(want, code) {
					t.Fatalf("bulksend %s: exit %d, want %v\n%s", strings.Join(args, " "), code, want, p.stderr)
				}
			}
			done := []int{ExitOK, ExitUnfinished} // rows in doubt, retries later
			runCLI(env, done, "run", csv, "--from", "1000001,1000002", "--template", "welcome", "--rate", "80",
				"--default-region", "GB", "--exclude", exclude, "--request-timeout", "1s", "--max-attempts", "2")
			runCLI(env, done, "run", csv, "--in-doubt", "resend")
			runCLI(env, []int{ExitOK}, "status", csv)

			// Another campaign, refused for its token.
			other := filepath.Join(t.TempDir(), "other.csv")
			if err := os.WriteFile(other, []byte("phone,name,code\n"+phones[2]+",A,1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			runCLI(map[string]string{"WHATSAPP_TOKEN": wrongToken, "BULKSEND_API_URL": url}, []int{ExitFatal},
				"run", other, "--from", "1000001", "--template", "welcome", "--no-preflight")

			out := stderr.String()
			for _, secret := range []string{token, wrongToken} {
				if strings.Contains(out, secret) {
					t.Errorf("stderr holds the token %s:\n%s", secret, out)
				}
			}
			if !regexp.MustCompile(`this run: .*, [1-9][0-9]* in doubt`).MatchString(out) || !strings.Contains(out, "(#190)") {
				t.Fatalf("no answer went missing, or the token was not refused: the test proves little\n%s", out)
			}
			if !strings.Contains(out, "suppression list: unusable phone ignored") {
				t.Fatalf("the suppression list's unusable line was not logged: the test proves little\n%s", out)
			}
			if tc.phones {
				return
			}
			for _, p := range phones {
				if strings.Contains(out, strings.TrimPrefix(p, "+")) {
					t.Errorf("stderr holds the phone %s:\n%s", p, out)
				}
			}
			for _, line := range unusable {
				if strings.Contains(out, line) || !strings.Contains(out, redact.Phones(line)) {
					t.Errorf("stderr does not show the line %q as %q:\n%s", line, redact.Phones(line), out)
				}
			}
			if masked := redact.Phone(phones[0]); !strings.Contains(out, masked) {
				t.Errorf("stderr does not show the phone as %s:\n%s", masked, out)
			}
			if _, err := os.Stat(filepath.Join(dir, "campaign.bulksend.db")); err != nil {
				t.Fatal(err)
			}
			st, err := store.Open(filepath.Join(dir, "campaign.bulksend.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if c, err := st.Counts(context.Background()); err != nil || c.Sent == 0 || c.Failed == 0 {
				t.Errorf("counts %+v (%v): the campaign met too little trouble to prove much", c, err)
			}
		})
	}
}
