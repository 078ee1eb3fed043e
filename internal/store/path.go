package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// A checkpoint is one file, whatever name reaches it: a symbolic link, a
// ".." or relative path, or the CSV opened by another path. The lock,
// the WAL and SQLite's own files are all named after one name, the
// resolved one, so every name that reaches the file shares them; a file
// with a second hard link is refused, as no name can be told the true one.

// ErrHardLinked refuses a checkpoint that has more than one name in the
// file system (hard links): two runs through two names would each take a
// lock and a WAL of their own, and send one campaign twice.
var ErrHardLinked = errors.New("the checkpoint has more than one hard link")

// ErrReadOnly marks a checkpoint that this process cannot write: on
// read-only media, or without write permission. Reading commands open it
// with OpenRead; a run cannot use it.
var ErrReadOnly = errors.New("the checkpoint is read-only")

// Resolve returns the one name bulksend uses for the checkpoint at path:
// absolute, cleaned, with every symbolic link resolved (the file's own,
// when it is one, and its folders'). A file that does not exist yet
// resolves through its folder; a symbolic link to nothing is refused, so
// that a link planted in a checkpoint's place never makes bulksend
// create its target.
func Resolve(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("checkpoint %q: %w", path, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err == nil {
		return real, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("checkpoint %q: %w", path, err)
	}
	if fi, lerr := os.Lstat(abs); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
		target, _ := os.Readlink(abs)
		return "", fmt.Errorf("checkpoint %q is a symbolic link to %q, which does not exist: remove the link, or name a real file", path, target)
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return "", fmt.Errorf("checkpoint %q: %w", path, err)
	}
	return filepath.Join(dir, filepath.Base(abs)), nil
}

// checkFile refuses a checkpoint at the resolved path that is not a
// regular file or has another name; a missing file passes (it is made).
func checkFile(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("checkpoint %q: %w", path, err)
	}
	return checkInfo(path, fi)
}

func checkInfo(path string, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("checkpoint %q is not a regular file (%s)", path, fi.Mode().Type())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
		return fmt.Errorf("checkpoint %q: %w (%d names): remove the other names (find / -samefile %q)", path, ErrHardLinked, st.Nlink, path)
	}
	return nil
}

// uri is the SQLite URI of the file at path with query, the path
// percent-encoded so that every byte a file name may hold ('?', '#', '%',
// spaces, a leading '-') lands in that file and no other. path is
// absolute (Resolve), so the URI never has an authority.
func uri(path, query string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len("file:") + len(path) + len(query) + 16)
	b.WriteString("file:")
	for i := 0; i < len(path); i++ {
		c := path[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '/', c == '-', c == '.', c == '_', c == '~':
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	if query != "" {
		b.WriteByte('?')
		b.WriteString(query)
	}
	return b.String()
}

// writable says whether this process may write the checkpoint at path
// and the folder its WAL is made in; a false answer comes with the
// reason (read-only media, or permissions).
func writable(path string) (bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if err == nil {
		f.Close()
		if err := syscall.Access(filepath.Dir(path), 2 /* W_OK */); err != nil {
			return false, err
		}
		return true, nil
	}
	if errors.Is(err, syscall.EROFS) || errors.Is(err, fs.ErrPermission) {
		return false, err
	}
	return true, nil // other errors are told by the open that follows
}

// readQuery is the URI query of a connection that only reads the file:
// read-write when this process may write it, so that the journal of an
// import that was killed is rolled back as SQLite requires (a read-only
// connection fails on it); read-only and immutable when it may not
// (OpenRead), so that SQLite makes no WAL beside it.
func readQuery(canWrite bool) string {
	if canWrite {
		return "mode=rw&_busy_timeout=5000"
	}
	return "mode=ro&immutable=1"
}
