package ledger

import (
	"errors"
	"fmt"
	"os"
	"path"
	"runtime"
	"strings"
)

// ErrNoHome says DefaultPath found no folder for the ledger: set
// BULKSEND_LEDGER, or HOME (LOCALAPPDATA on Windows).
var ErrNoHome = errors.New("ledger: no home folder")

// DefaultPath is where the ledger is when the operator names none:
// $BULKSEND_LEDGER when set (as given); else $XDG_STATE_HOME/bulksend/ledger.db
// on Linux, the BSDs and other Unixes ($HOME/.local/state when
// XDG_STATE_HOME is unset or relative, as the XDG specification says),
// ~/Library/Application Support/bulksend/ledger.db on macOS, and
// %LOCALAPPDATA%\bulksend\ledger.db on Windows. It fails with ErrNoHome
// when the variables it needs are empty: a ledger in a guessed place would
// be one the next run does not find.
func DefaultPath() (string, error) {
	return defaultPath(runtime.GOOS, os.Getenv)
}

// defaultPath is DefaultPath on goos with getenv's environment.
func defaultPath(goos string, getenv func(string) string) (string, error) {
	if p := getenv("BULKSEND_LEDGER"); p != "" {
		return p, nil
	}
	switch goos {
	case "windows":
		dir := getenv("LOCALAPPDATA")
		if dir == "" {
			if home := getenv("USERPROFILE"); home != "" {
				dir = strings.TrimRight(home, `\/`) + `\AppData\Local`
			}
		}
		if dir == "" {
			return "", errNoHome("LOCALAPPDATA")
		}
		return strings.TrimRight(dir, `\/`) + `\bulksend\ledger.db`, nil
	case "darwin", "ios":
		home := getenv("HOME")
		if home == "" {
			return "", errNoHome("HOME")
		}
		return path.Join(home, "Library", "Application Support", "bulksend", "ledger.db"), nil
	}
	if dir := getenv("XDG_STATE_HOME"); path.IsAbs(dir) {
		return path.Join(dir, "bulksend", "ledger.db"), nil
	}
	home := getenv("HOME")
	if home == "" {
		return "", errNoHome("HOME")
	}
	return path.Join(home, ".local", "state", "bulksend", "ledger.db"), nil
}

func errNoHome(variable string) error {
	return fmt.Errorf("%w: $%s is not set: set it, or name the ledger with $BULKSEND_LEDGER", ErrNoHome, variable)
}
