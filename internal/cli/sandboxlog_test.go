package cli

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// TestSandboxShortLog: run --sandbox reports a webhook log it could not
// write whole, as on a full disk: reconcile would read too little from
// it. The log is a file of a full tmpfs bind-mounted in its place (a
// regular file of this user's, which the sandbox takes): the test needs
// the right to mount, as root in a container has, and is skipped
// elsewhere. (Before logs refused links, a link to /dev/full did this.)
func TestSandboxShortLog(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("mounts a tmpfs")
	}
	dir := t.TempDir()
	fs := filepath.Join(dir, "fs")
	if err := os.Mkdir(fs, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", fs, "tmpfs", 0, "size=64k"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(fs, syscall.MNT_DETACH) })
	full := filepath.Join(fs, "log")
	if err := os.WriteFile(full, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	fill, err := os.Create(filepath.Join(fs, "fill"))
	if err != nil {
		t.Fatal(err)
	}
	for chunk := make([]byte, 4096); ; {
		if _, err := fill.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	fill.Close()

	csv, _ := writeCampaign(t, dir, 20)
	hooks := filepath.Join(dir, "campaign.webhooks.jsonl")
	if err := os.WriteFile(hooks, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount(full, hooks, "", syscall.MS_BIND, ""); err != nil {
		t.Skipf("cannot bind-mount a file here: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(hooks, syscall.MNT_DETACH) })

	p := startCLI(t, nil, "run", csv, "--sandbox", "--template", "welcome", "--from", "1000001", "--rate", "0")
	if code := p.wait(t); code != ExitFatal {
		t.Fatalf("exit %d, want %d:\n%s", code, ExitFatal, p.stderr)
	}
	stderr := p.stderr.String()
	if !strings.Contains(stderr, "this run: ") {
		t.Errorf("no summary of the run:\n%s", stderr)
	}
	if !regexp.MustCompile(`error: sandbox log .*campaign.webhooks.jsonl: .*no space left on device`).MatchString(stderr) {
		t.Errorf("the short log is not the run's error:\n%s", stderr)
	}
}
