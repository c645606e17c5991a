#!/bin/sh
# Lists the x86_64 Linux system calls (from the host's asm/unistd_64.h, the
# kernel headers Debian 12 ships for Linux 6.1) that have no entry in Kiln's
# dispatch table (kernel/src/syscall/mod.rs), so Kiln answers them ENOSYS.
# Calls in the table that still answer ENOSYS for some arguments (PI futexes,
# for instance) are not listed; grep the handlers for Errno::ENOSYS.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
hdr=/usr/include/x86_64-linux-gnu/asm/unistd_64.h
[ -r "$hdr" ] || { echo "enosys: $hdr missing (apt-get install linux-libc-dev)" >&2; exit 1; }
table=$(sed -n '/^syscall_table! {/,/^}/p' "$root/kernel/src/syscall/mod.rs" |
        sed -n 's/^ *\([A-Z0-9_]*\) *=>.*/\1/p' | tr 'A-Z' 'a-z' | sort -u)
total=0; missing=0
while read -r _ name nr; do
    name=${name#__NR_}
    total=$((total + 1))
    if ! printf '%s\n' "$table" | grep -qx "$name"; then
        missing=$((missing + 1))
        printf '%s %s\n' "$nr" "$name"
    fi
done <<HDR
$(grep '^#define __NR_' "$hdr")
HDR
echo "$missing of $total system calls answer ENOSYS" >&2
