# The sqlite3 shell with default (fcntl) locking: two writer processes
# and a reader on one database at once, in rollback-journal and in WAL
# mode, then queries over what they wrote.
for mode in delete wal; do
    db=$mode.db
    sqlite3 $db "PRAGMA journal_mode=$mode; CREATE TABLE t(w INTEGER, i INTEGER, pad TEXT);"
    for w in 1 2; do
        (
            i=0
            sql=".timeout 60000"
            while [ $i -lt 60 ]; do
                sql="$sql
BEGIN IMMEDIATE; INSERT INTO t VALUES($w, $i, printf('%0*d', $i, 0)); UPDATE t SET pad = pad || 'x' WHERE w = $w AND i = $i; COMMIT;"
                i=$((i + 1))
            done
            echo "$sql" | sqlite3 $db || echo "writer $w failed"
        ) &
    done
    (
        n=0
        while [ $n -lt 10 ]; do
            sqlite3 -cmd ".timeout 60000" $db "SELECT count(*) >= 0 FROM t;" >/dev/null || echo "reader failed"
            n=$((n + 1))
        done
    ) &
    wait
    echo "$mode: $(sqlite3 $db 'SELECT count(*), count(DISTINCT w), sum(i), sum(length(pad)) FROM t;') $(sqlite3 $db 'PRAGMA integrity_check;')"
done
sqlite3 -header -column wal.db "SELECT w, count(*) AS n, max(i) AS top FROM t GROUP BY w ORDER BY w;"
sqlite3 wal.db ".mode csv" "SELECT i, length(pad) FROM t WHERE w = 1 AND i % 20 = 0 ORDER BY i;"
sqlite3 wal.db ".dump t" | grep -c INSERT
