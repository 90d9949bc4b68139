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
//
// A binlog file and position mean something only on the server that wrote
// them: Source names it (sourceIdentity), and a checkpoint is resumed only
// on the same one. Columns is the source table's column order the rows
// after the position were written with, as far as the ingester knows it:
// a binary log without column names (binlog_row_metadata not FULL) is
// read by it, and an ALTER TABLE while the ingester was stopped leaves the
// order read at start a different one. Checkpoints written before these
// fields had neither; they adopt the current ones.
type Checkpoint struct {
	File               string   `json:"file"`
	Pos                uint32   `json:"pos"`
	SnapshotIncomplete bool     `json:"snapshot_incomplete,omitempty"`
	Source             string   `json:"source,omitempty"`
	Columns            []string `json:"columns,omitempty"`
	// FileCreated is when the source created File (its format
	// description event's time, seconds since the epoch; 0: not read
	// yet). A server rebuilt, or its binary log reset, writes a file of
	// the same name with other events, and the same server id.
	FileCreated uint32 `json:"file_created,omitempty"`
}

// samePosition tells whether a and b stand at the same place.
func (a Checkpoint) samePosition(b Checkpoint) bool {
	return a.File == b.File && a.Pos == b.Pos && a.SnapshotIncomplete == b.SnapshotIncomplete && a.FileCreated == b.FileCreated
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
