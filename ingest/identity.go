package ingest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	binlogclient "github.com/go-mysql-org/go-mysql/client"
)

// ErrOtherSource is returned when the DSN reaches a server other than the
// one the checkpoint was taken on, at start or when the ingester dials the
// source again after a lost connection: the checkpoint's binlog position
// names other events there, or none, and no retry mends that.
var ErrOtherSource = errors.New("ingest: the checkpoint was taken on another source")

// identityQuery lists the variables that name a source. SHOW VARIABLES
// lists those the server has and skips the others, where SELECT @@ fails
// on one it lacks (MariaDB has no server_uuid, MySQL no gtid_domain_id),
// so the same query serves the start, on database/sql, and every start of
// the binlog stream, on go-mysql's connection.
const identityQuery = "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('server_uuid', 'server_id', 'gtid_domain_id')"

// identityOf names the server the DSN reaches by the variables
// identityQuery lists (lower-case name -> value), for the checkpoint: a
// binlog file and position name one event on the server that wrote them
// and another, or none, on any other (a replica promoted behind the same
// name, a server rebuilt from a backup), where resuming there would skip
// or repeat changes without a word. MySQL names itself by server_uuid;
// MariaDB has no such variable, and is named by server_id and its GTID
// domain (gtid_domain_id), which replicas of one primary must not share
// the first of.
func identityOf(vars map[string]string) (string, error) {
	if uuid := vars["server_uuid"]; uuid != "" {
		return "server_uuid " + uuid, nil
	}
	serverID, err := strconv.ParseUint(vars["server_id"], 10, 64)
	if err != nil {
		return "", fmt.Errorf("ingest: the source shows neither a server_uuid nor a server_id (%q): it cannot be told from another server", vars)
	}
	domain, err := strconv.ParseUint(vars["gtid_domain_id"], 10, 64)
	if err != nil {
		return "", fmt.Errorf("ingest: the source shows no server_uuid and no gtid_domain_id (%q): it cannot be told from another server", vars)
	}
	return fmt.Sprintf("server_id %d, gtid_domain_id %d", serverID, domain), nil
}

// sourceIdentity reads the identity of the server the DSN reaches
// (identityOf).
func (in *Ingester) sourceIdentity(ctx context.Context) (string, error) {
	rows, err := in.db.QueryContext(ctx, identityQuery)
	if err != nil {
		return "", fmt.Errorf("ingest: reading the source's identity: %w", err)
	}
	defer rows.Close()
	vars := map[string]string{}
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return "", fmt.Errorf("ingest: reading the source's identity: %w", err)
		}
		vars[strings.ToLower(name)] = value
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("ingest: reading the source's identity: %w", err)
	}
	return identityOf(vars)
}

// streamIdentity reads the identity of the server c, a binlog stream's
// connection, reaches (identityOf).
func streamIdentity(c *binlogclient.Conn) (string, error) {
	r, err := c.Execute(identityQuery)
	if err != nil {
		return "", fmt.Errorf("ingest: reading the source's identity: %w", err)
	}
	defer r.Close()
	vars := map[string]string{}
	for i := range r.RowNumber() {
		name, err := r.GetString(i, 0)
		if err != nil {
			return "", fmt.Errorf("ingest: reading the source's identity: %w", err)
		}
		value, err := r.GetString(i, 1)
		if err != nil {
			return "", fmt.Errorf("ingest: reading the source's identity: %w", err)
		}
		// GetString's strings share the result's buffers, which Close
		// hands back to a pool.
		vars[strings.ToLower(name)] = strings.Clone(value)
	}
	return identityOf(vars)
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
		return in.otherSource(*cp, cp.Source, in.identity)
	}
	in.logf("the checkpoint %s names no source (an older ingester wrote it): taking it for the source with %s, which it is resumed on from now on", in.cfg.StateFile, in.identity)
	cp.Source = in.identity
	return in.writeCheckpoint(*cp)
}

// otherSource is the error of checkpoint cp, taken on the source with
// identity taken, met with the source with identity found.
func (in *Ingester) otherSource(cp Checkpoint, taken, found string) error {
	return fmt.Errorf("%w: %s (%s:%d) was taken on the source with %s, and the DSN reaches the source with %s now (a failover behind one address, a proxy pointed elsewhere, or a rebuilt server): the binlog position names other events there; start from a new snapshot (remove the state file %s; records of rows deleted since stay until you delete them)",
		ErrOtherSource, in.cfg.StateFile, cp.File, cp.Pos, taken, found, in.cfg.StateFile)
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
