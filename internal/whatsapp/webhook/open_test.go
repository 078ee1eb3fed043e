package webhook

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulksend/bulksend/internal/logfile"
)

func gz(t testing.TB, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// closeCounter is a stdin that notices being closed.
type closeCounter struct {
	io.Reader
	closed bool
}

func (c *closeCounter) Close() error { c.closed = true; return nil }

func TestOpen(t *testing.T) {
	h1, h2 := hook(st("w1", "sent")), hook(st("w2", "read"))
	text := lines(h1, h2)
	zlog := gz(t, text)
	var big bytes.Buffer // many deflate blocks: a cut loses only the last
	genLog(&big, 3000)
	zbig := gz(t, big.String())
	cut := zbig[:len(zbig)-100]
	corrupt := bytes.Clone(zlog)                                // a flipped byte in the trailer's CRC
	corrupt[len(corrupt)-6] ^= 0xff                             // (the last 8 bytes are CRC-32 and size)
	badHeader := []byte{0x1f, 0x8b, 99, 0, 0, 0, 0, 0, 0, 0, 0} // gzip magic, then an unknown method

	tests := []struct {
		name    string
		file    string // file name in a temp dir; "" for no file
		content []byte
		path    string // "-" for stdin; default: the file
		stdin   []byte
		want    int   // statuses, -1: some
		openErr error // errors.Is target of Open's error
		readErr error // errors.Is target of Next's error
	}{
		{name: "plain file", file: "log.ndjson", content: []byte(text), want: 2},
		{name: "gzip named .gz", file: "log.ndjson.gz", content: zlog, want: 2},
		{name: "gzip without .gz name", file: "export.log", content: zlog, want: 2},
		{name: "named .gz but not compressed", file: "log.gz", content: []byte(text), want: 2},
		{name: "concatenated gzip members", file: "cat.gz", content: append(gz(t, h1+"\n"), gz(t, h2+"\n")...), want: 2},
		{name: "gzip json array", file: "log.json.gz", content: gz(t, "["+h1+","+h2+"]"), want: 2},
		{name: "empty file", file: "empty", content: nil, want: 0},
		{name: "one byte file", file: "one", content: []byte{0x1f}, want: 0},
		{name: "stdin", path: "-", stdin: []byte(text), want: 2},
		{name: "gzip stdin", path: "-", stdin: zlog, want: 2},
		{name: "missing file", path: "nope.ndjson", openErr: fs.ErrNotExist},
		{name: "corrupt gzip header", file: "bad.gz", content: badHeader, openErr: gzip.ErrHeader},
		{name: "truncated gzip", file: "cut.gz", content: cut, want: -1, readErr: io.ErrUnexpectedEOF},
		{name: "gzip checksum mismatch", file: "crc.gz", content: corrupt, want: 2, readErr: gzip.ErrChecksum},
		{name: "gzip followed by garbage", file: "junk.gz", content: append(bytes.Clone(zlog), "this is not gzip data"...), want: 2, readErr: gzip.ErrHeader},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := tt.path
			if tt.file != "" {
				path = filepath.Join(dir, tt.file)
				if err := os.WriteFile(path, tt.content, 0o600); err != nil {
					t.Fatal(err)
				}
			} else if path != "-" {
				path = filepath.Join(dir, path)
			}
			stdin := &closeCounter{Reader: bytes.NewReader(tt.stdin)}
			rc, err := logfile.Open(path, stdin)
			if tt.openErr != nil {
				if !errors.Is(err, tt.openErr) {
					t.Fatalf("Open = %v, want an error wrapping %v", err, tt.openErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			got, _, err := readAll(NewReader(rc))
			if tt.readErr != nil {
				if !errors.Is(err, tt.readErr) {
					t.Errorf("Next = %v, want an error wrapping %v", err, tt.readErr)
				}
			} else if err != nil {
				t.Errorf("Next: %v", err)
			}
			if tt.want == -1 && (len(got) == 0 || len(got) >= 3000) {
				t.Errorf("read %d statuses, want some but not all", len(got))
			} else if tt.want >= 0 && len(got) != tt.want {
				t.Errorf("read %d statuses, want %d", len(got), tt.want)
			}
			if err := rc.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if stdin.closed {
				t.Errorf("Close closed stdin")
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := logfile.Open("-", nil); err == nil {
		t.Errorf(`logfile.Open("-", nil) succeeded`)
	}
	dir := t.TempDir()
	_, err := logfile.Open(dir, nil)
	if err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("Open(directory) = %v, want an error naming it", err)
	}
	path := filepath.Join(dir, "cut.gz")
	z := gz(t, lines(hook(st("w1", "sent"))))
	if err := os.WriteFile(path, z[:len(z)-3], 0o600); err != nil {
		t.Fatal(err)
	}
	rc, err := logfile.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	_, _, err = readAll(NewReader(rc))
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("reading a truncated gzip = %v, want an error naming the file", err)
	}
}
