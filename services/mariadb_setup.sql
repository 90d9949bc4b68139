CREATE DATABASE IF NOT EXISTS allot;
CREATE USER IF NOT EXISTS 'allot'@'127.0.0.1' IDENTIFIED BY 'allot';
CREATE USER IF NOT EXISTS 'allot'@'localhost' IDENTIFIED BY 'allot';
GRANT ALL PRIVILEGES ON *.* TO 'allot'@'127.0.0.1' WITH GRANT OPTION;
GRANT ALL PRIVILEGES ON *.* TO 'allot'@'localhost' WITH GRANT OPTION;
-- The account `allot ingest mysql` uses: read the table, follow the binlog.
CREATE USER IF NOT EXISTS 'allot_repl'@'127.0.0.1' IDENTIFIED BY 'allot_repl';
GRANT SELECT, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'allot_repl'@'127.0.0.1';
