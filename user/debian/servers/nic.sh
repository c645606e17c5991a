# The guest's half of the servers-through-the-NIC run (init of a Kiln
# booted with a virtio NIC on QEMU user networking, `ip=` giving eth0
# slirp's 10.0.2.15): Debian's nginx (stock config plus a server on port
# 80), redis-server (stock config, listening on every address instead of
# loopback only) and netecho serve 7000 (user/tests/netecho.c), all
# reached by clients on the host through hostfwd. It prints
# `servers ready` once all three listen and ends when the host sends
# netecho's stop, or after SERVERS_NIC_LIMIT seconds.
APPS=$(dirname "$0")
export LC_ALL=C TZ=UTC HOME=/root
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
. "$APPS/common.sh"
www=/var/www/kiln
mkdir -p "$www" /run/redis /var/log/nginx /var/lib/nginx /var/log/redis /var/lib/redis
fixed_file "$www/1k.bin" 1024
fixed_file "$www/64k.bin" 65536
fixed_file "$www/1m.bin" 1048576
cat >/etc/nginx/conf.d/kiln.conf <<CONF
server {
    listen 80;
    root $www;
}
CONF
nginx || exit 1
redis-server /etc/redis/redis.conf --daemonize no --logfile '' --bind '* -::*' --protected-mode no \
    >/tmp/redis.log 2>&1 &
redis=$!
timeout -k 5 "${SERVERS_NIC_LIMIT:-900}" /t/netecho serve 7000 &
echo=$!
until_ok 100 curl -sf -o /dev/null http://127.0.0.1/1k.bin &&
    until_ok 100 redis-cli ping &&
    echo "servers ready"
wait "$echo"
echo "netecho exit $?"
echo "nginx requests: $(grep -c '"GET /' /var/log/nginx/access.log)"
redis-cli shutdown nosave
wait "$redis"
master=$(cat /run/nginx.pid)
nginx -s quit 2>/dev/null
until_ok 100 gone "$master" && echo "servers stopped"
