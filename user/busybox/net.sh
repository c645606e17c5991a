# net.sh: the network's control plane as busybox sees it, lo only (the
# host has other interfaces, and its counters move): ip addr, link and
# route over netlink, ifconfig over the SIOCGIF* ioctls, route -n and
# netstat (with a listener of its own) over /proc/net; busybox wget
# against busybox httpd and nc both ways through a listener, over
# 127.0.0.1; ping of 127.0.0.1 and ::1 over raw ICMP sockets.
echo "--- ip"
ip addr show lo; echo "ip addr show lo: exit $?"
ip link show lo
ip -o link show lo
ip -4 addr show dev lo
ip -6 addr show dev lo
ip route show table local dev lo
ip -6 route show table local dev lo
ip route get 127.0.0.1
ip addr show dev nosuch0; echo "ip addr show dev nosuch0: exit $?"
ip link set dev lo mtu 65536; echo "ip link set dev lo mtu 65536: exit $?"
echo "--- ifconfig"
ifconfig lo | grep -v -e packets -e bytes
ifconfig nosuch0; echo "ifconfig nosuch0: exit $?"
echo "--- /proc/net"
route -n | head -2
netstat -rn | head -2
netstat -tln | head -2
netstat -uln | head -2
# Listeners on 127.0.0.1 ports picked free here (the host runs other
# tests at once): only their lines are shown, the port as PORT.
free_port() {
    p=$((20000 + ($$ * 7 + $1) % 20000))
    while netstat -tln | grep -q ":$p "; do p=$((p + 1)); done
    echo $p
}
# listening PORT: waits, bounded, until something listens on PORT.
listening() {
    i=0
    while ! netstat -tln | grep -q "127.0.0.1:$1 " && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
}
mkdir -p www
seq 1 30000 >www/numbers
hport=$(free_port 0)
httpd -f -p 127.0.0.1:$hport -h www & hp=$!
listening $hport
netstat -tln | grep "127.0.0.1:$hport " | sed "s/:$hport /:PORT /"
echo "--- wget"
wget -q -O got http://127.0.0.1:$hport/numbers; echo "wget numbers: exit $?"
echo "$(wc -c <got) bytes, $(cmp -s got www/numbers && echo same || echo DIFFERENT), $(md5sum <got)"
wget -q -O - http://127.0.0.1:$hport/numbers | tail -1
wget -q -O got http://127.0.0.1:$hport/missing 2>&1; echo "wget missing: exit $?"
kill $hp; wait $hp 2>/dev/null; echo "httpd stopped"
echo "--- nc"
# busybox nc shuts its sending side at its input's end and exits at the
# connection's end, so in each direction the receiver's input is a
# fifo that never ends (held open here) and the sender's end ends the
# transfer.
mkfifo never; exec 3<>never
seq 1 5000 >request
seq 7 3 30000 >reply
nport=$(free_port 1)
nc -l -p $nport <&3 >received & lp=$!
listening $nport
nc 127.0.0.1 $nport <request; echo "nc client sending: exit $?"
wait $lp; echo "nc listener receiving: exit $?"
echo "listener got $(wc -c <received) bytes, $(cmp -s received request && echo same || echo DIFFERENT)"
nc -l -p $nport <reply & lp=$!
listening $nport
nc 127.0.0.1 $nport <&3 >answer; echo "nc client receiving: exit $?"
wait $lp; echo "nc listener sending: exit $?"
echo "client got $(wc -c <answer) bytes, $(cmp -s answer reply && echo same || echo DIFFERENT)"
# An echo through a listener running cat on the connection.
nc -l -p $nport -e cat & lp=$!
listening $nport
nc 127.0.0.1 $nport <request >echoed; echo "nc echo client: exit $?"
wait $lp; echo "nc echo listener: exit $?"
echo "echoed $(wc -c <echoed) bytes, $(cmp -s echoed request && echo same || echo DIFFERENT)"
exec 3>&-
echo "--- ping"
# Raw ICMP sockets (root): the kernel answers the echo requests; times vary.
ping -c 3 127.0.0.1 | sed -e 's/time=[0-9.]* ms/time=T ms/' -e 's#= [0-9./]* ms#= T ms#'
echo "ping: exit $?"
ping -6 -c 2 ::1 | sed -e 's/time=[0-9.]* ms/time=T ms/' -e 's#= [0-9./]* ms#= T ms#'
