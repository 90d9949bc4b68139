package ingest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"allot/vfs"
)

// Checkpoint is a binlog position at a transaction boundary whose rows
// allot has acknowledged; or, with SnapshotIncomplete, the position a
// snapshot that has begun to set records stands at, and no more: the
// snapshot is taken again and the binary log followed from there.
type Checkpoint struct {
	File               string `json:"file"`
	Pos                uint32 `json:"pos"`
	SnapshotIncomplete bool   `json:"snapshot_incomplete,omitempty"`
}

// readCheckpoint returns the checkpoint in path; ok is false when there
// is none yet.
func readCheckpoint(path string) (cp Checkpoint, ok bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Checkpoint{}, false, nil
	}
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("ingest: reading the checkpoint: %w", err)
	}
	if err := json.Unmarshal(b, &cp); err != nil || cp.File == "" || cp.Pos < 4 {
		return Checkpoint{}, false, fmt.Errorf("ingest: checkpoint %s is corrupt (%q): delete it to start from a new snapshot", path, b)
	}
	return cp, true, nil
}

// writeCheckpoint replaces the checkpoint durably (vfs.WriteFileAtomic).
func writeCheckpoint(path string, cp Checkpoint) error {
	b, _ := json.Marshal(cp)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("ingest: checkpoint: %w", err)
	}
	if err := vfs.WriteFileAtomic(vfs.OS{}, path, b); err != nil {
		return fmt.Errorf("ingest: checkpoint %s: %w", path, err)
	}
	return nil
}
