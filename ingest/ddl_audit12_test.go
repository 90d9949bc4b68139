package ingest

import (
	"reflect"
	"testing"
)

// The statements the twelfth audit's fixes recognise in the binary log
// and in SHOW CREATE TABLE.

func TestAudit12TransactionStatements(t *testing.T) {
	for _, c := range []struct{ query, verb, name string }{
		{"BEGIN", txBegin, ""},
		{"START TRANSACTION", txBegin, ""},
		{"COMMIT", txCommit, ""},
		{"ROLLBACK", txRollback, ""},
		{"ROLLBACK WORK", txRollback, ""},
		{"ROLLBACK TO `s1`", txRollbackTo, "s1"},
		{"rollback work to savepoint S1", txRollbackTo, "s1"},
		{"SAVEPOINT `Mein Punkt`", txSavepoint, "mein punkt"},
		{"XA START X'31',X'',1", txBegin, ""},
		{"XA COMMIT X'31',X'',1 ONE PHASE", txCommit, ""},
		{"XA ROLLBACK X'31',X'',1", txRollback, ""},
		{"XA END X'31',X'',1", txNone, ""},
		{"SET STATEMENT max_statement_time=1 FOR COMMIT", txCommit, ""},
		{"INSERT INTO t VALUES (1)", txNone, ""},
		{"/* ROLLBACK */ CREATE TABLE rollback_log (id INT)", txNone, ""},
	} {
		verb, name := transactionStatement(c.query)
		if verb != c.verb || name != c.name {
			t.Errorf("%q: %q %q, want %q %q", c.query, verb, name, c.verb, c.name)
		}
	}
}

func TestAudit12ChangesRows(t *testing.T) {
	for q, want := range map[string]bool{
		"INSERT INTO t VALUES (1)":                             true,
		"insert into t values (1)":                             true,
		"REPLACE INTO t VALUES (1)":                            true,
		"UPDATE t SET a = 1":                                   true,
		"DELETE FROM t":                                        true,
		"DELETE t1, t2 FROM t1 JOIN t2 USING (id)":             true,
		"LOAD DATA LOCAL INFILE 'x' INTO TABLE t":              true,
		"WITH c AS (SELECT 1) UPDATE t, c SET t.a = 1":         true,
		"SET STATEMENT sql_mode='' FOR INSERT INTO t VALUES 1": true,
		"/*!40000 INSERT INTO t VALUES (1) */":                 true,
		"CREATE TABLE insert_log (id INT)":                     false,
		"BEGIN":                                                false,
		"COMMIT":                                               false,
		"`INSERT`":                                             false,
	} {
		if got := changesRows(q); got != want {
			t.Errorf("changesRows(%q) = %v, want %v", q, got, want)
		}
	}
	if !namesIdentifier("INSERT INTO `Allot`.t VALUES (1)", "allot") || namesIdentifier("INSERT INTO t VALUES ('allot')", "allot") {
		t.Error("namesIdentifier: a quoted database name is one, a string is not")
	}
}

func TestAudit12CascadingForeignKeys(t *testing.T) {
	create := "CREATE TABLE `c` (\n" +
		"  `id` int(11) NOT NULL,\n" +
		"  `p` int(11) DEFAULT NULL,\n" +
		"  PRIMARY KEY (`id`),\n" +
		"  KEY `fk_a12` (`p`),\n" +
		"  CONSTRAINT `c_ibfk_1` FOREIGN KEY (`q`) REFERENCES `p` (`k`),\n" +
		"  CONSTRAINT `c_ibfk_2` FOREIGN KEY (`q`) REFERENCES `p` (`k`) ON DELETE NO ACTION ON UPDATE RESTRICT,\n" +
		"  CONSTRAINT `fk_a12` FOREIGN KEY (`p`) REFERENCES `p` (`id`) ON DELETE CASCADE,\n" +
		"  CONSTRAINT `odd name` FOREIGN KEY (`q`) REFERENCES `other`.`p` (`k`) ON DELETE SET NULL ON UPDATE SET DEFAULT\n" +
		") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
	want := []cascadingForeignKey{
		{name: "fk_a12", parent: "p", rules: "ON DELETE CASCADE"},
		{name: "odd name", parent: "other.p", rules: "ON DELETE SET NULL ON UPDATE SET DEFAULT"},
	}
	if got := cascadingForeignKeys(create); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
