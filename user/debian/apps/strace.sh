# strace: Debian's strace traces `ls -l` and then `sh -c 'ls | wc -l'`
# (-ff: one trace per process) through ptrace. What can match the host
# exactly is each process's sequence of system-call names with their
# outcome (the errno name, or "ok"): the same binaries make the same
# calls when the kernel answers the same way. Addresses, sizes, inode
# numbers, times and process ids cannot, so arguments and values are
# dropped; so are signal deliveries and what they interrupt, whose
# place in the parent's sequence depends on when its children exit.
set -e
mkdir -p d/sub && touch d/a d/b
normalize() {
    sed -n -e '/^--- SIG/d' -e '/= ? ERESTART/d' -e '/^rt_sigreturn(/d' \
        -e '/^+++ exited with/{s/.*with \([0-9]*\).*/exit \1/p;d}' \
        -e 's/^\([a-z0-9_]*\)(.*= -1 \(E[A-Z0-9]*\).*/\1 \2/p' \
        -e 's/^\([a-z0-9_]*\)(.*= [-0-9x?a-f]*.*$/\1 ok/p' "$1"
}
traces() {
    n=0
    for f in $(ls "$1".* | sort -t. -k2 -n); do
        echo "process $n:"
        normalize "$f" | tr '\n' ' ' | fold -w 100 -s; echo
        n=$((n + 1))
    done
    rm -f "$1".*
}
strace -ff -o ls ls -l d > /dev/null
traces ls
strace -ff -o sh sh -c 'ls d | wc -l' > /dev/null
traces sh
