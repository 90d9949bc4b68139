package ingest

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// sourceIdentity names the server the DSN reaches, for the checkpoint: a
// binlog file and position name one event on the server that wrote them
// and another, or none, on any other (a replica promoted behind the same
// name, a server rebuilt from a backup), where resuming there would skip
// or repeat changes without a word. MySQL names itself by @@server_uuid;
// MariaDB has no such variable, and is named by @@server_id and its GTID
// domain (@@gtid_domain_id), which replicas of one primary must not share
// the first of.
func (in *Ingester) sourceIdentity(ctx context.Context) (string, error) {
	var uuid string
	err := in.db.QueryRowContext(ctx, "SELECT @@GLOBAL.server_uuid").Scan(&uuid)
	if err == nil && uuid != "" {
		return "server_uuid " + uuid, nil
	}
	var me *mysql.MySQLError
	if err != nil && !(errors.As(err, &me) && me.Number == 1193) { // 1193: unknown system variable
		return "", fmt.Errorf("ingest: reading the source's server_uuid: %w", err)
	}
	var serverID, domain uint64
	if err := in.db.QueryRowContext(ctx, "SELECT @@GLOBAL.server_id, @@GLOBAL.gtid_domain_id").Scan(&serverID, &domain); err != nil {
		return "", fmt.Errorf("ingest: reading the source's server_id and gtid_domain_id: %w", err)
	}
	return fmt.Sprintf("server_id %d, gtid_domain_id %d", serverID, domain), nil
}

// resumable checks that checkpoint cp was taken on the source the DSN
// reaches now. One written before checkpoints named their source adopts
// the current one, and is written again with it (with the column order
// read at start, which is what it was resumed with before).
func (in *Ingester) resumable(cp *Checkpoint) error {
	if len(cp.Columns) > 0 {
		in.orderAt = cp.Columns
	}
	if cp.Source == in.identity {
		return nil
	}
	if cp.Source != "" {
		return fmt.Errorf("ingest: the checkpoint %s (%s:%d) was taken on the source with %s, and the DSN reaches the source with %s now (a failover behind one address, or a rebuilt server): the binlog position names other events there; start from a new snapshot (remove the state file %s; records of rows deleted since stay until you delete them)",
			in.cfg.StateFile, cp.File, cp.Pos, cp.Source, in.identity, in.cfg.StateFile)
	}
	in.logf("the checkpoint %s names no source (an older ingester wrote it): taking it for the source with %s, which it is resumed on from now on", in.cfg.StateFile, in.identity)
	cp.Source = in.identity
	return in.writeCheckpoint(*cp)
}

// writeCheckpoint writes cp with the source's identity and the column
// order at its position.
func (in *Ingester) writeCheckpoint(cp Checkpoint) error {
	cp.Source, cp.Columns = in.identity, in.orderAt
	return writeCheckpoint(in.cfg.StateFile, cp)
}

// sameOrder tells whether a and b are the same columns in the same order
// (column names compare without regard to case).
func sameOrder(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !strings.EqualFold(a[i], b[i]) {
			return false
		}
	}
	return true
}
