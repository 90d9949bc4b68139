package ingest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Checkpoint is a binlog position at a transaction boundary whose rows
// allot has acknowledged.
type Checkpoint struct {
	File string `json:"file"`
	Pos  uint32 `json:"pos"`
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

// writeCheckpoint replaces the checkpoint atomically: a new file, synced,
// renamed over the old one, and the directory synced.
func writeCheckpoint(path string, cp Checkpoint) error {
	b, _ := json.Marshal(cp)
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("ingest: checkpoint: %w", err)
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("ingest: checkpoint: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("ingest: checkpoint: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("ingest: checkpoint: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("ingest: checkpoint: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("ingest: checkpoint: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
