# Debian's own programs on a small Debian root (`make test`'s Debian
# stage), section by section; the host runs the same script in the same
# tree under chroot, and the outputs must match.
#
# Every program is started through the dynamic loader, as a user could on
# any Linux: it works whether or not the kernel's exec loads PT_INTERP
# itself. Nothing here may depend on the machine (no /proc, no times)
# or on whether stdout is a terminal (it is in Kiln: the console).
L=/lib64/ld-linux-x86-64.so.2
t() {
    section=$1
    echo "=== $section ==="
    eval "$2"
    echo "=== $section exit $? ==="
}
t dash 'x=kiln-debian; echo $((6 * 7)) ${#x} ${x%-*} ${x#*-}; set -- a b c; echo $# "$2"'
t links '$L /usr/bin/readlink /bin/sh /lib64 /usr/bin/awk /etc/alternatives/awk'
t ls '$L /usr/bin/ls -1d /bin /etc /usr/lib/x86_64-linux-gnu; $L /usr/bin/ls -1 /etc/ld.so.conf.d'
t etc '$L /usr/bin/cat /etc/hostname; $L /usr/bin/grep -c : /etc/passwd; $L /usr/bin/sed -n "1p;\$p" /etc/group'
t os-release '$L /usr/bin/grep -E "^(ID|VERSION_ID)=" /etc/os-release'
t sha256sum '$L /usr/bin/sha256sum /etc/passwd /etc/group /usr/bin/dash'
t pipeline '$L /usr/bin/seq 1 1000 | $L /usr/bin/sort -rn | $L /usr/bin/head -3 | $L /usr/bin/tr "\n" " "; echo'
t stat '$L /usr/bin/stat -c "%n %s %a %F" /etc/hostname /bin /usr/bin/dash /tmp'
t mawk '$L /usr/bin/mawk -F: "\$3 == 0 || \$3 >= 1000 { print \$1, \$7 }" /etc/passwd'
t gzip 'echo hello debian | $L /usr/bin/gzip -c | $L /usr/bin/gzip -dc'
t tar '$L /usr/bin/tar -C /etc -cf /tmp/etc.tar hostname shells && $L /usr/bin/tar -tf /tmp/etc.tar'
t find '$L /usr/bin/find /etc -maxdepth 1 -name "host*" | $L /usr/bin/sort'
t diff 'echo a > /tmp/a; echo b > /tmp/b; $L /usr/bin/diff /tmp/a /tmp/b; echo "diff said $?"'
t date '$L /usr/bin/date -u -d @86400 "+%Y-%m-%d %H:%M:%S"'
t ldd '$L --list /usr/bin/ls | $L /usr/bin/mawk "{ print \$1 }" | $L /usr/bin/grep -v vdso | $L /usr/bin/sort'
t errors '$L /usr/bin/ls /nonexistent 2>&1; echo "ls said $?"; $L /usr/bin/cat /etc 2>&1; echo "cat said $?"'
