package cli

import (
	"context"
	"errors"
	"log/slog"
	"strings"

	"github.com/spf13/pflag"

	"github.com/bulksend/bulksend/internal/budget"
)

// budgetOptions are --budget and its password file: the sender numbers'
// budget shared through a Redis server by every process sending from
// them, on any host.
type budgetOptions struct {
	url          string
	passwordFile string
}

func (b *budgetOptions) flags(f *pflag.FlagSet) {
	f.StringVar(&b.url, "budget", "", "share each sender number's rate with every bulksend process sending from it, on any host, through Redis: redis://HOST:PORT/DB, rediss://… for TLS (default $BULKSEND_BUDGET)")
	f.StringVar(&b.passwordFile, "budget-password-file", "", "read the --budget server's password from this file (rather than put it in the URL)")
}

// budgetPasswordMax bounds what is read of --budget-password-file.
const budgetPasswordMax = 4 << 10

// open connects to the budget named by --budget or $BULKSEND_BUDGET; nil
// when there is none (a dry run needs none). scope keeps a rehearsal's
// numbers apart from the provider's.
func (b *budgetOptions) open(ctx context.Context, ios *IO, o *runOptions, scope string, log *slog.Logger) (*budget.Budget, error) {
	u, what := b.url, "--budget"
	if u == "" {
		u, what = strings.TrimSpace(ios.Getenv("BULKSEND_BUDGET")), "$BULKSEND_BUDGET"
	}
	if u == "" {
		if b.passwordFile != "" {
			return nil, usagef("", "--budget-password-file goes with --budget (or $BULKSEND_BUDGET)")
		}
		return nil, nil
	}
	if o.dryRun {
		return nil, nil
	}
	bo := budget.Options{URL: u, Namespace: scope}
	if b.passwordFile != "" {
		p, err := readLineFile("budget-password-file", b.passwordFile, budgetPasswordMax, "a password")
		if err != nil {
			return nil, err
		}
		bo.Password = p
	}
	if _, err := budget.Parse(bo); err != nil {
		if errors.Is(err, budget.ErrTwoPasswords) {
			return nil, usagef("keep the password in --budget-password-file alone", "%s %s: %w", what, budget.Redact(u), err)
		}
		return nil, usagef("e.g. --budget redis://10.0.0.5:6379/0", "invalid %s: %w", what, err)
	}
	bk, err := budget.Open(ctx, bo)
	if err != nil {
		return nil, err
	}
	log.Info("each sender number's rate is shared with every process sending from it", "budget", bk.URL())
	return bk, nil
}

// budgetHint is what to do when the shared budget cannot be reached.
const budgetHint = "the shared budget's Redis server does not answer: nothing was sent unbooked, and rows not sent are pending; " +
	"start it (or fix --budget / $BULKSEND_BUDGET), then run the same command again"
