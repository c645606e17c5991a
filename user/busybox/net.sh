# net.sh: the network's control plane as busybox sees it, lo only (the
# host has other interfaces, and its counters move): ip addr, link and
# route over netlink, ifconfig over the SIOCGIF* ioctls, route -n and
# netstat (with a listener of its own) over /proc/net; ping of 127.0.0.1
# and ::1 over raw ICMP sockets.
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
# A listener on 127.0.0.1 (the host has others: only its line is shown).
mkdir -p www
httpd -f -p 127.0.0.1:7777 -h www & hp=$!
i=0; while ! netstat -tln | grep -q 127.0.0.1:7777 && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
netstat -tln | grep 127.0.0.1:7777
kill $hp; wait $hp 2>/dev/null; echo "httpd stopped"
echo "--- ping"
# Raw ICMP sockets (root): the kernel answers the echo requests; times vary.
ping -c 3 127.0.0.1 | sed -e 's/time=[0-9.]* ms/time=T ms/' -e 's#= [0-9./]* ms#= T ms#'
echo "ping: exit $?"
ping -6 -c 2 ::1 | sed -e 's/time=[0-9.]* ms/time=T ms/' -e 's#= [0-9./]* ms#= T ms#'
