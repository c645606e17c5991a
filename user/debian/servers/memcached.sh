# memcached as Debian's /etc/memcached.conf runs it (64 MiB, port 11211,
# user memcache, 127.0.0.1) in the foreground; busybox nc speaks its
# text protocol.
. "$APPS/common.sh"
set -u
memcached -m 64 -p 11211 -u memcache -l 127.0.0.1 >server.log 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid' EXIT
mc() {
    printf "$1quit\r\n" | busybox nc 127.0.0.1 11211 | tr -d '\r'
}
until_ok 100 sh -c 'printf "version\r\nquit\r\n" | busybox nc 127.0.0.1 11211 | grep -q VERSION' || exit 1
mc 'set greeting 5 0 5\r\nhello\r\nget greeting\r\n'
mc 'add greeting 0 0 1\r\nx\r\nappend greeting 0 0 6\r\n world\r\ngets greeting\r\n' | sed 's/ [0-9]*$/ CAS/'
mc 'set n 0 0 1\r\n7\r\nincr n 35\r\ndecr n 2\r\ndelete n\r\nget n\r\n'
fixed_file big 65536
{ printf 'set big 0 0 65536\r\n'; cat big; printf '\r\nget big\r\nquit\r\n'; } | busybox nc 127.0.0.1 11211 >reply
head -c 50 reply | tr -d '\r' | head -2
tail -c +28 reply | head -c 65536 | cmp - big && echo "64 KiB value same"
i=0
while [ $i -lt 200 ]; do
    printf 'set k%d 0 0 %d\r\n%d\r\n' $i ${#i} $i
    i=$((i + 1))
done >sets
printf 'get k0 k99 k199\r\nquit\r\n' >>sets
busybox nc 127.0.0.1 11211 <sets | tr -d '\r' | sort | uniq -c
mc 'stats\r\n' | grep -E 'STAT (curr_items|total_items|cmd_get|get_hits|get_misses) '
kill "$pid"
until_ok 100 gone "$pid" && echo "memcached stopped"
