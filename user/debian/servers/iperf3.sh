# iperf3 server and client over 127.0.0.1: 16 MiB each way (the client
# sending, then -R), and whether the sender's side reports at least
# 16 MiB sent (the exact totals depend on timing, on Linux too: the
# receiver stops counting at the end exchange, and a sending server may
# overshoot by some blocks).
. "$APPS/common.sh"
set -u
iperf3 -s -p 5201 --forceflush >server.log 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid' EXIT
until_ok 100 grep -q 'Server listening' server.log || exit 1
for mode in "" -R; do
    iperf3 -c 127.0.0.1 -p 5201 -n 16M $mode -J >client.json
    echo "client${mode:+ $mode} exit $?"
    sent=$(sed -n '/"sum_sent"/,/}/p' client.json | grep '"bytes"' | tr -dc 0-9)
    echo "sent at least 16 MiB: $([ "${sent:-0}" -ge 16777216 ] && echo yes || echo "no (${sent:-none})")"
done
kill "$pid"
until_ok 100 gone "$pid" && echo "iperf3 stopped"
