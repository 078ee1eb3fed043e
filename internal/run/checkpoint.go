package run

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/bulksend/bulksend/internal/store"
)

// CheckpointOf is the checkpoint of a campaign CSV: CAMPAIGN.bulksend.db
// beside the file the CSV's name leads to, so that every path to one CSV
// (a symbolic link to it, a linked folder) finds the one checkpoint. A CSV
// that is gone (status after the file was moved) is taken as named.
func CheckpointOf(csvPath string) (string, error) {
	real, err := filepath.EvalSymlinks(csvPath)
	if err != nil {
		return besideCSV(csvPath), nil
	}
	db := besideCSV(real)
	// Releases before issue 23 kept the checkpoint beside the link: a
	// campaign begun so is not begun again in a new checkpoint.
	if old := besideCSV(csvPath); old != db {
		_, errOld := os.Stat(old)
		_, errNew := os.Stat(db)
		oldReal, _ := store.Resolve(old)
		newReal, _ := store.Resolve(db)
		if errOld == nil && errors.Is(errNew, fs.ErrNotExist) && oldReal != newReal {
			return "", &BesideLinkError{CSV: csvPath, Target: real, Checkpoint: old, Want: db}
		}
	}
	return db, nil
}

// BesideLinkError is a campaign whose CSV is a link and whose checkpoint
// an older release made beside the link, where this one keeps it beside
// the link's target (Want).
type BesideLinkError struct{ CSV, Target, Checkpoint, Want string }

func (e *BesideLinkError) Error() string {
	return fmt.Sprintf("%s is a link to %s: this campaign's checkpoint is %s, beside the link, where bulksend keeps it beside the file the link leads to", e.CSV, e.Target, e.Checkpoint)
}

func besideCSV(csvPath string) string {
	base := strings.TrimSuffix(csvPath, ".csv")
	base = strings.TrimSuffix(base, ".CSV")
	return base + ".bulksend.db"
}
