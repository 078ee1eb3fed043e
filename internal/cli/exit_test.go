package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/engine"
	"github.com/bulksend/bulksend/internal/store"
	"github.com/bulksend/bulksend/internal/whatsapp"
)

// fatal is a run stopped by the API's answer, as the engine returns it.
func fatal(e *whatsapp.APIError) error {
	return fmt.Errorf("run: %w", &engine.FatalError{Err: &campaign.SendError{Class: campaign.Fatal, Code: e.Code, Title: e.Title(), Err: e}})
}

func TestExitCodesAndHints(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		code int
		hint string // a part of it; "" for none at all
	}{
		{"expired token", fatal(&whatsapp.APIError{HTTPStatus: 401, Code: 190, Type: "OAuthException"}), ExitFatal, "set WHATSAPP_TOKEN (or --token-file)"},
		{"no error body names the URL flags and the status", fatal(&whatsapp.APIError{HTTPStatus: 404}), ExitFatal, "HTTP 404 without an error body: check --api-url"},
		{"unknown template", fatal(&whatsapp.APIError{HTTPStatus: 404, Code: 132001, Type: "OAuthException"}), ExitFatal, "check --template and --lang"},
		{"parameter count", fatal(&whatsapp.APIError{HTTPStatus: 400, Code: 132000, Type: "OAuthException"}), ExitFatal, "do not match the template's: check the CSV's columns against it with --waba"},
		{"request shape", fatal(&whatsapp.APIError{HTTPStatus: 400, Code: 100, Type: "OAuthException"}), ExitFatal, "check --template, --lang, --from"},
		{"the provider's own advice", fatal(&whatsapp.APIError{HTTPStatus: 400, Code: 131042, Type: "OAuthException"}), ExitFatal, "payment method"},
		{"a fatal code without advice", fatal(&whatsapp.APIError{HTTPStatus: 400, Code: 131051, Type: "OAuthException"}), ExitFatal, "check --template"},
		{"an error that is no API answer has no hint", errors.New("disk I/O error"), ExitFatal, ""},
		{"a full disk", fmt.Errorf("record results: %w", errors.Join(errors.New("database or disk is full"), store.ErrDiskFull)), ExitFatal, "free space"},
		{"a full disk under a file", &os.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC}, ExitFatal, "free space"},
		{"a newer checkpoint", fmt.Errorf("open: %w", store.ErrNewerSchema), ExitFatal, "upgrade bulksend"},
		{"interrupted", fmt.Errorf("send: %w", context.Canceled), ExitUnfinished, "run the same command again"},
		{"unreachable", engine.ErrUnreachable, ExitUnfinished, "check the network"},
		{"locked", &store.LockedError{Path: "c.db"}, ExitLocked, "wait for that run"},
		{"usage", usagef("try --help", "bad flag"), ExitUsage, "try --help"},
		{"a hint given with the error outranks the code's", &hintError{err: fmt.Errorf("read template: %w", &whatsapp.APIError{HTTPStatus: 400, Code: 100, Type: "OAuthException"}), hint: "check --waba"}, ExitFatal, "check --waba"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, hint := exitCode(tc.err)
			if code != tc.code {
				t.Errorf("exit code %d, want %d", code, tc.code)
			}
			if (tc.hint == "") != (hint == "") || !strings.Contains(hint, tc.hint) {
				t.Errorf("hint %q, want one containing %q", hint, tc.hint)
			}
		})
	}
}
