package report

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// chromium is Debian's headless browser, or "" when it is not installed.
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// headless runs chromium on the page at path with args, in a profile of
// its own that nothing outside the test shares, and returns its stdout.
func headless(t *testing.T, path string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
		"--user-data-dir=" + t.TempDir()}, args...)
	cmd := exec.CommandContext(ctx, chromium(), append(all, "file://"+path)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.Bytes())
	}
	return stdout.Bytes()
}

// TestBrowserRendersReport has a real browser open the report: the page
// it parsed (its DOM) holds the checkpoint's figures and nothing from
// outside, and its screenshot is a picture of the page's size. It needs
// Debian's chromium (apt-get install chromium) and is skipped without it,
// and under -short.
func TestBrowserRendersReport(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	if chromium() == "" {
		t.Skip("no chromium on PATH: apt-get install chromium to run this test")
	}
	st, db := fixture(t)
	r, err := Gather(t.Context(), st, at(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := Render(f, r); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	dom := headless(t, page, "--dump-dom")
	if !bytes.Contains(dom, []byte(`id="rate-0"`)) || !bytes.Contains(dom, []byte("</svg>")) {
		t.Fatalf("the browser's DOM has no rate chart:\n%.2000s", dom)
	}
	checkAgainstCheckpoint(t, dom, db)

	shot := filepath.Join(dir, "report.png")
	headless(t, page, "--hide-scrollbars", "--window-size=1200,2400", "--screenshot="+shot)
	b, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	if cfg.Width != 1200 || cfg.Height != 2400 {
		t.Errorf("screenshot %d×%d, want 1200×2400", cfg.Width, cfg.Height)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	// Something was drawn: the page is not blank.
	dark := 0
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y += 4 {
		for x := bounds.Min.X; x < bounds.Max.X; x += 4 {
			if r, g, b, _ := img.At(x, y).RGBA(); r+g+b < 3*0x8000 {
				dark++
			}
		}
	}
	if dark < 500 {
		t.Errorf("the screenshot is nearly blank: %d dark samples", dark)
	}
}
