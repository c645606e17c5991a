# iperf3 server and client over 127.0.0.1: 16 MiB each way (the client
# sending, then -R), with the bytes the sender's side reports (the
# receiver's total depends on when the server stops counting, on Linux
# too).
. "$APPS/common.sh"
set -u
iperf3 -s -p 5201 --forceflush >server.log 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid' EXIT
until_ok 100 grep -q 'Server listening' server.log || exit 1
for mode in "" -R; do
    iperf3 -c 127.0.0.1 -p 5201 -n 16M $mode -J >client.json
    echo "client${mode:+ $mode} exit $?"
    sed -n '/"sum_sent"/,/}/p' client.json | grep '"bytes"' | tr -d ' \t,'
done
kill "$pid"
until_ok 100 gone "$pid" && echo "iperf3 stopped"
