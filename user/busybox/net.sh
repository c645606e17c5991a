# net.sh: the network's control plane as busybox sees it, lo only (the
# host has other interfaces, and its counters move): ip addr, link and
# route over netlink, route -n and netstat over /proc/net.
# ip prints "qlen N" from SIOCGIFTXQLEN on an AF_INET socket, which Kiln
# does not have until its Internet sockets land: it is cut here (q).
q() { sed -e 's/ qlen [0-9]*$//' -e 's/ $//' -e 's/ qlen [0-9]*\\/\\/' -e 's/ \\/\\/'; }
echo "--- ip"
ip addr show lo > ipa.out; echo "ip addr show lo: exit $?"; q < ipa.out
ip link show lo | q
ip -o link show lo | q
ip -4 addr show dev lo | q
ip -6 addr show dev lo | q
ip route show table local dev lo
ip -6 route show table local dev lo
ip route get 127.0.0.1
ip addr show dev nosuch0; echo "ip addr show dev nosuch0: exit $?"
echo "--- /proc/net"
route -n | head -2
netstat -rn | head -2
netstat -tln | head -2
netstat -uln | head -2
