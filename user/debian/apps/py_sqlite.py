# Python's sqlite3 module with default locking: a schema, four writer
# processes committing concurrently (rollback journal, then WAL), a
# reader while they write, and queries over the result.
import os
import sqlite3
import sys
import tempfile


def writer(path, w, n):
    con = sqlite3.connect(path, timeout=60)
    for i in range(n):
        with con:
            con.execute("INSERT INTO t VALUES (?, ?, ?)", (w, i, "x" * (i % 50)))
            con.execute("UPDATE t SET pad = pad || ? WHERE w = ? AND i = ?", ("y", w, i))
    con.close()
    os._exit(0)


def run(mode, d):
    path = os.path.join(d, f"{mode}.db")
    con = sqlite3.connect(path, timeout=60)
    print(mode, "journal mode:", con.execute(f"PRAGMA journal_mode={mode}").fetchone()[0])
    con.execute("CREATE TABLE t (w INTEGER, i INTEGER, pad TEXT)")
    con.commit()
    pids = []
    for w in range(4):
        pid = os.fork()
        if pid == 0:
            writer(path, w, 40)
        pids.append(pid)
    reads = 0
    for _ in range(10):
        n = con.execute("SELECT count(*) FROM t").fetchone()[0]
        reads += n >= 0
    codes = [os.waitpid(p, 0)[1] for p in pids]
    print(mode, "writers exited:", codes, "reads:", reads)
    print(mode, "rows:", con.execute("SELECT count(*), count(DISTINCT w), sum(i), sum(length(pad)) FROM t").fetchone())
    print(mode, "integrity:", con.execute("PRAGMA integrity_check").fetchone()[0])
    con.close()


with tempfile.TemporaryDirectory() as d:
    run("delete", d)
    run("wal", d)
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE emp (name TEXT, dept TEXT, salary INTEGER)")
    con.executemany("INSERT INTO emp VALUES (?, ?, ?)",
                    [("ann", "eng", 120), ("bob", "eng", 100), ("cy", "ops", 90), ("di", "ops", 95), ("ed", "hr", 70)])
    for row in con.execute("SELECT dept, count(*), avg(salary), max(name) FROM emp GROUP BY dept ORDER BY dept"):
        print("group:", row)
    print("window:", con.execute(
        "SELECT name, rank() OVER (PARTITION BY dept ORDER BY salary DESC) FROM emp ORDER BY name").fetchall())
    print("json:", con.execute("SELECT json_object('n', count(*)) FROM emp").fetchone()[0])
    print("sqlite version ok:", sqlite3.sqlite_version_info >= (3, 0, 0), file=sys.stdout)
