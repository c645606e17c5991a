# nginx with Debian's stock /etc/nginx/nginx.conf (master and workers as
# www-data, sendfile on) plus one server on port 8080 whose root holds a
# 1 KiB and a 64 KiB file; busybox wget and Debian's curl fetch each and
# their bytes are compared with the files.
. "$APPS/common.sh"
set -u
www=/var/www/kiln
mkdir -p "$www" /run /var/log/nginx /var/lib/nginx
fixed_file "$www/1k.bin" 1024
fixed_file "$www/64k.bin" 65536
cat >/etc/nginx/conf.d/kiln.conf <<CONF
server {
    listen 127.0.0.1:8080;
    root $www;
}
CONF
nginx -t 2>&1 | sed 's/^nginx: //'
nginx || exit 1
trap '[ -f /run/nginx.pid ] && kill $(cat /run/nginx.pid) 2>/dev/null' EXIT
until_ok 100 curl -sf -o /dev/null http://127.0.0.1:8080/1k.bin || exit 1
[ "$(pgrep -c -u www-data -x nginx)" -ge 1 ] && echo "workers run as www-data"
for f in 1k.bin 64k.bin; do
    rm -f got
    busybox wget -q -O got "http://127.0.0.1:8080/$f"
    echo "wget $f: exit $? $(wc -c <got) bytes, $(cmp -s got "$www/$f" && echo same || echo DIFFERENT)"
    curl -s -o got -w '%{http_code} %{size_download}' "http://127.0.0.1:8080/$f"
    echo " curl $f: $(cmp -s got "$www/$f" && echo same || echo DIFFERENT)"
    sha256sum got | cut -c1-16
done
# Keep-alive: two requests on one connection, then a missing file.
curl -s -o /dev/null -o /dev/null -w '%{http_code} %{num_connects}\n' \
    http://127.0.0.1:8080/1k.bin http://127.0.0.1:8080/64k.bin
curl -s -o /dev/null -w '%{http_code}\n' http://127.0.0.1:8080/missing
# Twenty fetches in parallel.
i=0
while [ $i -lt 20 ]; do
    curl -s -o "par$i" "http://127.0.0.1:8080/64k.bin" &
    i=$((i + 1))
done
wait
same=0
for p in par*; do cmp -s "$p" "$www/64k.bin" && same=$((same + 1)); done
echo "parallel: $same of 20 same"
grep -c '"GET /' /var/log/nginx/access.log
master=$(cat /run/nginx.pid)
nginx -s quit 2>/dev/null
until_ok 100 gone "$master" && echo "nginx stopped"
