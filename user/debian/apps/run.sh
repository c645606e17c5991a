# The Debian workloads (`make test`'s Debian-workload stage): each
# section runs one unmodified Debian program on a deterministic job, in
# Kiln and on the host (the same root under chroot), and the outputs must
# be identical. `sh run.sh [SECTION...]` runs the named sections (all by
# default) in this order. Each runs in a fresh directory under /tmp with
# stdin from /dev/null and stdout and stderr to a file (so no program
# sees a terminal), under `timeout` so a hang costs one section only.
# After each section a line gives its run time and one MemFree (KiB)
# before it and after its files are gone (not compared; xtask checks
# Kiln's across stress-ng for leaks).
APPS=$(dirname "$0")
export APPS LC_ALL=C TZ=UTC HOME=/root PYTHONDONTWRITEBYTECODE=1
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
LIMIT=${APPS_LIMIT:-240}
SELECTED=" $* "

memfree() {
    while read -r key kib _; do
        [ "$key" = MemFree: ] && echo "$kib" && return
    done </proc/meminfo
}

section() {
    name=$1
    shift
    case "$SELECTED" in
    "  " | *" $name "*) ;;
    *) return ;;
    esac
    dir=/tmp/apps/$name
    rm -rf "$dir" && mkdir -p "$dir" && cd "$dir" || exit 1
    echo "=== $name ==="
    free0=$(memfree)
    t0=$(date +%s%N)
    timeout -k 10 "$LIMIT" "$@" </dev/null >/tmp/apps/$name.out 2>&1
    rc=$?
    cat /tmp/apps/$name.out
    echo "=== $name exit $rc ==="
    # Outside the section, so not compared: how long it took and the
    # memory it left.
    echo "--- $name took $((($(date +%s%N) - t0) / 1000000)) ms"
    cd / && rm -rf "$dir" /tmp/apps/$name.out
    echo "--- $name MemFree $free0 $(memfree)"
}

section python-threads python3 "$APPS/py_threads.py"
section python-subprocess python3 "$APPS/py_subprocess.py"
section python-mp-fork python3 "$APPS/py_multiprocessing.py" fork
section python-mp-spawn python3 "$APPS/py_multiprocessing.py" spawn
section python-asyncio python3 "$APPS/py_asyncio.py"
section python-sqlite3 python3 "$APPS/py_sqlite.py"
section perl perl "$APPS/text.pl"
section git sh "$APPS/git.sh"
section make-gcc sh "$APPS/cbuild.sh"
section sqlite3 sh "$APPS/sqlite.sh"
section jq sh "$APPS/jq.sh"
section xz-zstd sh "$APPS/compress.sh"
section openssl sh "$APPS/openssl.sh"
section vim sh "$APPS/vim.sh"
section go "$APPS/gotest"
section node node "$APPS/node.js"
section strace sh "$APPS/strace.sh"
section gdb sh "$APPS/gdb.sh"
section stress-ng sh "$APPS/stress.sh"
