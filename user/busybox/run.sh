# Kiln busybox scripted sessions: the runner.
#
#   busybox sh run.sh [NAME...]      (default: every *.sh except run.sh)
#
# Makes a directory of symlinks to busybox, one per applet, puts it first in
# PATH, and runs each NAME.sh with "busybox sh" from a fresh directory:
#
#   === name ===
#   ...output...
#   === name exit N ===
#
# Exit status 0 iff every script exited 0.  BUSYBOX overrides the binary.
BB=${BUSYBOX:-/bin/busybox}
case $0 in
/*) HERE=${0%/*} ;;
*/*) HERE=$(cd "${0%/*}" && pwd) ;;
*) HERE=$(pwd) ;;
esac
BIN=/tmp/bb-bin
$BB rm -rf "$BIN"
$BB mkdir -p "$BIN"
for a in $($BB --list); do
    $BB ln -s "$BB" "$BIN/$a"
done
export PATH="$BIN"
export TZ=UTC LC_ALL=C HOME=/
unset BB_DEMO

if [ $# -eq 0 ]; then
    set -- sh text files procs archive net
fi
total=0
failed=0
for name in "$@"; do
    total=$((total + 1))
    echo "=== $name ==="
    rm -rf /tmp/bb-run
    mkdir -p /tmp/bb-run
    (cd /tmp/bb-run && "$BB" sh "$HERE/$name.sh" 2>&1)
    st=$?
    echo "=== $name exit $st ==="
    [ $st -eq 0 ] || failed=$((failed + 1))
done
rm -rf /tmp/bb-run "$BIN"
echo "run.sh: $total scripts, $failed failed"
[ $failed -eq 0 ]
