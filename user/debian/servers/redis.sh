# redis-server with Debian's stock /etc/redis/redis.conf in the
# foreground (the port it names, 6379), redis-cli round trips of small
# and 64 KiB values, and redis-benchmark at small counts, plain and
# pipelined.
. "$APPS/common.sh"
set -u
mkdir -p /run/redis /var/log/redis /var/lib/redis
redis-server /etc/redis/redis.conf --daemonize no --logfile '' >server.log 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid' EXIT
until_ok 100 redis-cli ping || { cat server.log; exit 1; }
redis-cli ping
redis-cli set greeting hello
redis-cli get greeting
redis-cli incr counter
redis-cli incrby counter 41
redis-cli rpush list a b c
redis-cli lrange list 0 -1
fixed_file big 65536
redis-cli -x set big <big
redis-cli strlen big
redis-cli --raw get big | head -c 65536 | cmp - big && echo "64 KiB value same"
redis-cli dbsize
redis-benchmark -q -n 2000 -c 10 -t set,get >bench.out 2>&1
echo "benchmark exit $?: $(grep -c 'requests per second' bench.out) tests"
redis-benchmark -q -n 2000 -c 10 -P 16 -t set,get,incr,lpush >bench.out 2>&1
echo "pipelined benchmark exit $?: $(grep -c 'requests per second' bench.out) tests"
redis-cli get key:__rand_int__
redis-cli get counter:__rand_int__
redis-cli shutdown nosave 2>&1
until_ok 100 gone "$pid" && echo "redis stopped"
