# stress-ng: the fork, vm, pipe, futex, sem, msg, mmap, timer and signal
# stressors together for 10 seconds. The bogo-op counts depend on speed,
# so what is compared is the exit status, what was dispatched, which
# stressors made progress, and that no stressor reported a failure.
stress-ng --fork 2 --vm 1 --vm-bytes 32M --pipe 1 --futex 1 --sem 1 --msg 1 \
    --mmap 1 --mmap-bytes 16M --timer 1 --signal 1 --timeout 10s --verify --metrics-brief > stress.log 2>&1
rc=$?
# Drop the "stress-ng: info: [pid]" prefix; keep what was dispatched,
# every failure or warning line, each stressor that made progress (a
# metrics row with a non-zero count) and the verdict.
sed -n -e 's/^stress-ng: \([a-z]*\): *\[[0-9]*\] /\1 /' \
    -e '/^info dispatching/p' -e '/^\(fail\|warn\|error\)/p' \
    -e 's/^metrc \([a-z]*\) *[1-9][0-9]* .*/\1 made progress/p' \
    -e 's/^info successful run completed.*/successful run completed/p' stress.log
echo "stress-ng exit $rc"
[ $rc = 0 ] || tail -20 stress.log
