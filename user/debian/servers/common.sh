# Shared by the server scripts: waiting, bounded, for a condition.

# until_ok TRIES CMD...: runs CMD every 0.2 s until it succeeds, at most
# TRIES times; fails if it never did.
until_ok() {
    n=$1
    shift
    while [ "$n" -gt 0 ]; do
        "$@" >/dev/null 2>&1 && return 0
        n=$((n - 1))
        sleep 0.2
    done
    echo "gave up waiting for: $*"
    return 1
}

# gone PID: true once the process has exited.
gone() {
    ! kill -0 "$1" 2>/dev/null
}

# A file of SIZE bytes whose content is fixed (the decimal numbers from
# 1, one a line, cut to SIZE).
fixed_file() {
    seq 1 300000 | head -c "$2" >"$1"
}
