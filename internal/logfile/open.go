package logfile

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
)

// Open opens a provider's log at path (webhooks, SMS events) to read it. The path "-" means
// stdin, which Close leaves open. Gzip is detected by its magic bytes, not
// by the file name, so a compressed stdin or a renamed file works, and a
// file named .gz that is not compressed is read as it is. Several gzip
// members one after the other (concatenated .gz files) are read in turn.
//
// Open fails if the file cannot be opened or read, or if its gzip header
// is corrupt. A gzip stream that turns out truncated or corrupt later is an
// error from Read, which a Reader returns from Next.
func Open(path string, stdin io.Reader) (io.ReadCloser, error) {
	var (
		src  io.Reader
		file *os.File
		name = path
	)
	if path == "-" {
		if stdin == nil {
			return nil, errors.New("open log: no stdin")
		}
		src, name = stdin, "stdin"
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("open log: %w", err)
		}
		src, file = f, f
	}
	br := bufio.NewReader(src)
	magic, err := br.Peek(2)
	if err != nil && err != io.EOF {
		closeFile(file)
		if file == nil {
			return nil, fmt.Errorf("open log: read stdin: %w", err)
		}
		return nil, fmt.Errorf("open log: %w", err) // err names the file
	}
	if len(magic) < 2 || magic[0] != 0x1f || magic[1] != 0x8b {
		return &logFile{Reader: br, file: file}, nil
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		closeFile(file)
		return nil, fmt.Errorf("open log %s: gunzip: %w", name, err)
	}
	return &logFile{Reader: &gunzip{zr: zr, name: name}, file: file}, nil
}

func closeFile(f *os.File) {
	if f != nil {
		f.Close()
	}
}

// logFile is what Open returns.
type logFile struct {
	io.Reader
	file *os.File // nil for stdin
}

// Close closes the file, if it is not stdin. A decompression error is not
// repeated: Read returned it already.
func (l *logFile) Close() error {
	if l.file == nil {
		return nil
	}
	return l.file.Close()
}

// gunzip names the log in decompression errors, which say nothing of where
// they happened.
type gunzip struct {
	zr   *gzip.Reader
	name string
}

func (g *gunzip) Read(p []byte) (int, error) {
	n, err := g.zr.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("gunzip %s: %w", g.name, err)
	}
	return n, err
}

// OpenContext is Open that gives up when ctx is done. Open reads the
// first bytes: on stdin that may wait for a writer, and an interrupt must
// not.
func OpenContext(ctx context.Context, path string, stdin io.Reader) (io.ReadCloser, error) {
	type opened struct {
		f   io.ReadCloser
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		f, err := Open(path, stdin)
		ch <- opened{f, err}
	}()
	select {
	case o := <-ch:
		return o.f, o.err
	case <-ctx.Done():
		go func() {
			if o := <-ch; o.f != nil {
				o.f.Close()
			}
		}()
		return nil, ctx.Err()
	}
}
