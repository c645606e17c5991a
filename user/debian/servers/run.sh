# Debian's servers inside one machine (`make test`'s servers stage): each
# section starts one unmodified Debian server with its stock
# configuration plus a listening port, drives it with Debian's own
# clients (and busybox's) over 127.0.0.1, prints what the clients got
# (sizes, digests, replies; no rates or times), and stops the server. It
# runs in Kiln and on the host (the same root under chroot, in a fresh
# network namespace), and the outputs must be identical. `sh run.sh
# [SECTION...]` runs the named sections (all by default). A section runs
# under `timeout`, so a hang costs that section only.
APPS=$(dirname "$0")
export APPS LC_ALL=C TZ=UTC HOME=/root
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
LIMIT=${SERVERS_LIMIT:-180}
SELECTED=" $* "

section() {
    name=$1
    shift
    case "$SELECTED" in
    "  " | *" $name "*) ;;
    *) return ;;
    esac
    dir=/tmp/servers/$name
    rm -rf "$dir" && mkdir -p "$dir" && cd "$dir" || exit 1
    echo "=== $name ==="
    t0=$(date +%s%N)
    timeout -k 10 "$LIMIT" "$@" </dev/null >/tmp/servers/$name.out 2>&1
    rc=$?
    cat /tmp/servers/$name.out
    echo "=== $name exit $rc ==="
    echo "--- $name took $((($(date +%s%N) - t0) / 1000000)) ms"
    cd / && rm -rf "$dir" /tmp/servers/$name.out
}

section nginx sh "$APPS/nginx.sh"
section redis sh "$APPS/redis.sh"
section memcached sh "$APPS/memcached.sh"
section iperf3 sh "$APPS/iperf3.sh"
