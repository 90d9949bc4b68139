package ingest

import (
	"context"
	"database/sql"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"
)

// What audit10_test.go (package ingest_test) reaches inside the package
// for.

// StopsAt runs the check an ingester following shop.p makes at a query
// event of the binary log with that statement, run with defaultSchema as
// its current database. withNames: the source writes column names
// (binlog_row_metadata=FULL).
func StopsAt(query, defaultSchema string, withNames bool) error {
	in := &Ingester{cfg: Config{Table: "p"}, src: source{database: "shop"}, withNames: withNames, logf: func(string, ...any) {}}
	return in.tableChanged(&replication.QueryEvent{Query: []byte(query), Schema: []byte(defaultSchema)}, "mariadb-bin.000001", 4)
}

// BinlogText renders value v of column col of a row that came with table
// map t as the ingester sends it, for an ingester that read the columns'
// information_schema COLUMN_TYPEs types (by ordinal) at start.
func BinlogText(types []string, t *replication.TableMapEvent, col int, v any) (string, error) {
	in := &Ingester{startTypes: columnTypes{unsigned: map[int]bool{}}, byName: map[string]columnInfo{}}
	for i, c := range types {
		dataType, _, _ := strings.Cut(c, "(")
		in.startTypes.unsigned[i] = columnInfoOf(c, dataType, sql.NullInt64{}).unsigned
	}
	return in.render(t, col, v)
}

// render is value v of column col as the ingester sends it, for a row that
// came with table map t.
func (in *Ingester) render(t *replication.TableMapEvent, col int, v any) (string, error) {
	ct, err := in.typesOf(t)
	if err != nil {
		return "", err
	}
	x, err := ct.text(col, v)
	if err != nil {
		return "", err
	}
	return text(x), nil
}

// BinlogRenderer reads the columns of database.table as an ingester does
// at start (the table has a column id) and returns how it renders a value
// of a row that came with a table map.
func BinlogRenderer(ctx context.Context, db *sql.DB, database, table string) (func(t *replication.TableMapEvent, col int, v any) (string, error), error) {
	in := &Ingester{db: db, src: source{database: database}, cfg: Config{Table: table, SKUColumn: "id", TitleColumn: "id", BrandColumn: "id"}}
	if err := in.readColumns(ctx); err != nil {
		return nil, err
	}
	return in.render, nil
}
