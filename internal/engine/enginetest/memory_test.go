package enginetest

import (
	"testing"

	"github.com/bulksend/bulksend/internal/engine"
)

func TestMemory(t *testing.T) {
	CheckpointSuite(t, func(t *testing.T, rows []Row) (engine.Checkpoint, Probe) {
		m := NewMemory(rows...)
		return m, m
	})
}
