# The guest's half of the servers-through-the-NIC run (init of a Kiln
# booted with a virtio NIC on QEMU user networking, `ip=` giving eth0
# slirp's 10.0.2.15): Debian's nginx (stock config plus a server on port
# 80), redis-server (stock config, listening on every address instead of
# loopback only) and netecho serve 7000 (user/tests/netecho.c), all
# reached by clients on the host through hostfwd, as are memcached
# (11211) and iperf3 -s (5201). It prints `servers ready` once nginx and
# redis answer and ends when the host sends netecho's stop, or after
# SERVERS_NIC_LIMIT seconds.
#
# `nic.sh bench` (make bench-servers) runs under Debian's Linux as well: there the
# script is init of a bare initramfs, so it mounts what Linux leaves
# unmounted, loads the virtio_net module (Debian's cloud kernel has
# CONFIG_VIRTIO_NET=m, and virtio and virtio_pci are modules too; the
# bench copies them to /apps/modules in load order)
# and gives eth0 the address Kiln takes from `ip=`: the second argument
# (`nic.sh bench 10.77.0.2/24`), slirp's 10.0.2.15/24 by default. Under
# `make bench-servers TAP=1` the NIC is a tap in a network namespace of
# the host (xtask/src/tapnet.rs) and the clients dial that address.
APPS=$(dirname "$0")
export LC_ALL=C TZ=UTC HOME=/root
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
if [ -d "$APPS/modules" ]; then
    busybox mount -t devtmpfs devtmpfs /dev
    exec </dev/console >/dev/console 2>&1
    busybox mount -t proc proc /proc
    busybox mount -t sysfs sysfs /sys
    busybox mount -t tmpfs tmpfs /tmp
    busybox mount -t tmpfs tmpfs /run
    for m in virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci \
        failover net_failover virtio_net; do
        busybox insmod "$APPS/modules/$m.ko" || echo "insmod $m failed"
    done
    busybox ip link set lo up
    busybox ip link set eth0 up
    busybox ip addr add "${2:-10.0.2.15/24}" dev eth0
fi
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
netecho=/t/netecho
[ -x "$netecho" ] || netecho=$APPS/netecho
timeout -k 5 "${SERVERS_NIC_LIMIT:-900}" "$netecho" serve 7000 &
echo=$!
memcached -m 64 -p 11211 -u memcache -l 0.0.0.0 -t 2 &
iperf3 -s -p 5201 >/tmp/iperf3.log 2>&1 &
until_ok 100 curl -sf -o /dev/null http://127.0.0.1/1k.bin &&
    until_ok 100 redis-cli ping &&
    echo "servers ready"
wait "$echo"
echo "netecho exit $?"
[ -r /proc/kiln/netpoll ] && cat /proc/kiln/netpoll
echo "nginx requests: $(grep -c '"GET /' /var/log/nginx/access.log)"
# Bounded: a redis that stopped answering must not hold the guest up.
timeout 10 redis-cli shutdown nosave >/dev/null || kill -9 "$redis"
wait "$redis"
master=$(cat /run/nginx.pid)
nginx -s quit 2>/dev/null
until_ok 100 gone "$master" && echo "servers stopped"
pkill -x memcached
pkill -x iperf3
wait
