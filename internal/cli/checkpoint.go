package cli

import (
	"errors"
	"fmt"

	"github.com/bulksend/bulksend/internal/run"
)

// dbPath is the checkpoint of a campaign CSV (run.CheckpointOf).
func dbPath(csvPath string) (string, error) {
	db, err := run.CheckpointOf(csvPath)
	var beside *run.BesideLinkError
	if errors.As(err, &beside) {
		return "", &usageError{Err: err, Hint: fmt.Sprintf("move it beside the CSV (mv %q %q), or point --db at it", beside.Checkpoint, beside.Want)}
	}
	return db, err
}
