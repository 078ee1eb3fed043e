package ledger

import (
	"errors"
	"path/filepath"
	"runtime"
	"testing"
)

// TestDefaultPath runs DefaultPath on this system with each combination
// of the variables it reads.
func TestDefaultPath(t *testing.T) {
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		t.Skipf("the XDG cases are for Linux and the BSDs; %s is covered by TestDefaultPathEachSystem", runtime.GOOS)
	}
	home := t.TempDir()
	type env map[string]string
	for _, tc := range []struct {
		name string
		env  env
		want string // "" for ErrNoHome
	}{
		{"BULKSEND_LEDGER wins", env{"BULKSEND_LEDGER": "/srv/bulksend/l.db", "XDG_STATE_HOME": "/x", "HOME": home}, "/srv/bulksend/l.db"},
		{"BULKSEND_LEDGER is taken as given", env{"BULKSEND_LEDGER": "rel/l.db", "HOME": ""}, "rel/l.db"},
		{"XDG_STATE_HOME", env{"XDG_STATE_HOME": "/var/state", "HOME": home}, "/var/state/bulksend/ledger.db"},
		{"XDG_STATE_HOME without HOME", env{"XDG_STATE_HOME": "/var/state", "HOME": ""}, "/var/state/bulksend/ledger.db"},
		{"relative XDG_STATE_HOME is ignored", env{"XDG_STATE_HOME": "state", "HOME": home}, filepath.Join(home, ".local/state/bulksend/ledger.db")},
		{"no XDG_STATE_HOME", env{"HOME": home}, filepath.Join(home, ".local/state/bulksend/ledger.db")},
		{"no home", env{"HOME": ""}, ""},
		{"relative XDG_STATE_HOME and no home", env{"XDG_STATE_HOME": "state", "HOME": ""}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, v := range []string{"BULKSEND_LEDGER", "XDG_STATE_HOME", "HOME"} {
				t.Setenv(v, tc.env[v]) // unset ones are empty, as DefaultPath reads them
			}
			got, err := DefaultPath()
			check(t, got, err, tc.want)
		})
	}
}

func check(t *testing.T, got string, err error, want string) {
	t.Helper()
	if want == "" {
		if !errors.Is(err, ErrNoHome) {
			t.Fatalf("got %q, %v; want ErrNoHome", got, err)
		}
		return
	}
	if err != nil || got != want {
		t.Fatalf("got %q, %v; want %q", got, err, want)
	}
}

// TestDefaultPathEachSystem runs the rules of every system on a made-up
// environment.
func TestDefaultPathEachSystem(t *testing.T) {
	type env map[string]string
	for _, tc := range []struct {
		name string
		goos string
		env  env
		want string // "" for ErrNoHome
	}{
		{"linux", "linux", env{"HOME": "/home/ann"}, "/home/ann/.local/state/bulksend/ledger.db"},
		{"linux XDG", "linux", env{"HOME": "/home/ann", "XDG_STATE_HOME": "/home/ann/st"}, "/home/ann/st/bulksend/ledger.db"},
		{"freebsd", "freebsd", env{"HOME": "/usr/home/ann"}, "/usr/home/ann/.local/state/bulksend/ledger.db"},
		{"openbsd XDG relative", "openbsd", env{"HOME": "/home/ann", "XDG_STATE_HOME": "./st"}, "/home/ann/.local/state/bulksend/ledger.db"},
		{"linux override", "linux", env{"BULKSEND_LEDGER": "/tmp/l.db"}, "/tmp/l.db"},
		{"linux no home", "linux", env{}, ""},
		{"darwin", "darwin", env{"HOME": "/Users/ann", "XDG_STATE_HOME": "/Users/ann/st"}, "/Users/ann/Library/Application Support/bulksend/ledger.db"},
		{"darwin override", "darwin", env{"HOME": "/Users/ann", "BULKSEND_LEDGER": "/Volumes/x/l.db"}, "/Volumes/x/l.db"},
		{"darwin no home", "darwin", env{}, ""},
		{"windows", "windows", env{"LOCALAPPDATA": `C:\Users\ann\AppData\Local`, "HOME": "/home/ann"}, `C:\Users\ann\AppData\Local\bulksend\ledger.db`},
		{"windows trailing backslash", "windows", env{"LOCALAPPDATA": `C:\Users\ann\AppData\Local\`}, `C:\Users\ann\AppData\Local\bulksend\ledger.db`},
		{"windows without LOCALAPPDATA", "windows", env{"USERPROFILE": `C:\Users\ann`}, `C:\Users\ann\AppData\Local\bulksend\ledger.db`},
		{"windows override", "windows", env{"LOCALAPPDATA": `C:\x`, "BULKSEND_LEDGER": `D:\l.db`}, `D:\l.db`},
		{"windows no home", "windows", env{"HOME": "/home/ann"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := defaultPath(tc.goos, func(v string) string { return tc.env[v] })
			check(t, got, err, tc.want)
		})
	}
}
