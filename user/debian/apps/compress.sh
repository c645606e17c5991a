# xz and zstd round trips with checksums of the data and, single-threaded
# (and zstd -T2, whose output does not depend on the thread count), of
# the compressed streams.
set -e
seq 1 50000 | sed 's/$/ kiln debian round trip/' > data.txt
sha256sum data.txt
xz -T1 -6 -k -c data.txt > data.xz
xz -T2 -k -c data.txt > data2.xz
echo "xz single-threaded: $(sha256sum < data.xz | cut -c1-16)"
xz -dc data.xz | sha256sum
xz -dc data2.xz | sha256sum
xz -t data.xz data2.xz && echo "xz -t ok"
xz -l --robot data.xz | grep '^totals' | cut -f2-5
echo garbage | xz -dc 2>&1 | sed 's/^xz: //' || true

zstd -q -19 -c data.txt > data.zst
zstd -q -T2 -3 -c data.txt > data2.zst
echo "zstd -19: $(sha256sum < data.zst | cut -c1-16)"
echo "zstd -T2: $(sha256sum < data2.zst | cut -c1-16)"
zstd -dc data.zst | sha256sum
zstd -dc data2.zst | sha256sum
zstd -q -t data.zst data2.zst && echo "zstd -t ok"
zstd -q -c --long=20 data.txt | zstd -dc --long=20 | cmp - data.txt && echo "long window ok"
