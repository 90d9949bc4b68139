package ingest

// What the twelfth audit's tests (package ingest_test) reach inside the
// package for.

// SetTransactionRowsMax sets how many rows of one transaction in holds
// back until its end (transaction.go): a test of a transaction that
// outgrows the bound need not write 100,000 rows.
func SetTransactionRowsMax(in *Ingester, n int) { in.transactionRowsMax = n }
