#!/bin/sh
# Concurrent writers on one SQLite database with default (fcntl) locking,
# in rollback-journal and in WAL mode: four writer processes (30
# transactions each, BEGIN IMMEDIATE with a busy timeout) and a reader.
# Run by hand, in Kiln and on the host, with a static sqlite3 shell:
#
#   apt-get source --download-only sqlite3 && tar xf sqlite3_*.orig.tar.xz
#   (cd sqlite3-*/ && tclsh tool/mkshellc.tcl > ../shell.c)
#   gcc -O1 -static -o d/t/sqlite3 shell.c -Isqlite3-*/src -lsqlite3 -lpthread -lm -ldl
#   cp writers.sh d/t/ && make run EXTRA=d CMD="sh /t/writers.sh"
#   SQLITE=d/t/sqlite3 sh writers.sh /tmp/sqlw     # the host, same output
#
# Expected: "delete: 120|4|1740 ok" and "wal: 120|4|1740 ok".
S=${SQLITE:-/t/sqlite3}
DIR=${1:-/tmp/sqlw}
rm -rf $DIR; mkdir -p $DIR
for mode in delete wal; do
  DB=$DIR/$mode.db
  $S $DB "PRAGMA journal_mode=$mode; CREATE TABLE t(w INTEGER, i INTEGER, pad TEXT);" >/dev/null
  for w in 1 2 3 4; do
    (
      i=0
      sql=".timeout 60000"
      while [ $i -lt 30 ]; do
        sql="$sql
BEGIN IMMEDIATE; INSERT INTO t VALUES($w, $i, hex(randomblob(100))); UPDATE t SET pad=hex(randomblob(50)) WHERE w=$w AND i=$i; COMMIT;"
        i=$((i+1))
      done
      echo "$sql" | $S $DB || echo "writer $w failed"
    ) &
  done
  # A reader at the same time.
  ( n=0; while [ $n -lt 10 ]; do $S -cmd ".timeout 60000" $DB "SELECT count(*) >= 0 FROM t;" >/dev/null || echo "reader failed"; n=$((n+1)); done ) &
  wait
  echo "$mode: $($S $DB 'SELECT count(*), count(DISTINCT w), sum(i) FROM t;') $($S $DB 'PRAGMA integrity_check;')"
done
rm -rf $DIR
