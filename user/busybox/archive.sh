# archive.sh: checksums and archives: md5sum, sha1sum, sha256sum,
# sha512sum, base64, gzip/gunzip/zcat, bzip2/bunzip2, tar (create,
# list, extract, gzip-compressed), cpio; every round trip compared with cmp.
D=/tmp/bb-archive
rm -rf $D; mkdir -p $D; cd $D || exit 1
fails=0
ck() { if [ "$1" = "$2" ]; then echo "$3: ok"; else echo "FAIL: $3: got [$1] want [$2]"; fails=$((fails + 1)); fi; }
umask 022

printf 'hello\n' > hello.txt
: > empty.txt
seq 1 20000 > numbers.txt
awk 'BEGIN { for (i = 0; i < 3000; i++) printf "%c", 32 + (i * 7919) % 95 }' > mixed.txt

echo "--- checksums"
md5sum hello.txt empty.txt
sha1sum hello.txt
sha256sum hello.txt empty.txt
sha512sum hello.txt | cut -c1-32
md5sum numbers.txt mixed.txt
sha256sum numbers.txt
printf 'abc' | md5sum
printf 'abc' | sha256sum
md5sum hello.txt numbers.txt > sums.md5
md5sum -c sums.md5
echo "bad" >> hello.txt; md5sum -c sums.md5 > check.out 2>/dev/null; echo "md5sum -c after change: status $?, $(grep -c OK check.out) OK"
printf 'hello\n' > hello.txt

echo "--- base64"
printf 'Kiln kernel' | base64
printf 'S2lsbiBrZXJuZWw=' | base64 -d; echo
base64 mixed.txt | base64 -d | cmp - mixed.txt && echo "base64 round trip"

echo "--- gzip"
cp numbers.txt n.txt
gzip n.txt; ck "$(ls n.txt n.txt.gz 2>/dev/null)" n.txt.gz 'gzip replaces the file with .gz'
[ $(stat -c %s n.txt.gz) -lt $(stat -c %s numbers.txt) ]; ck $? 0 'compressed is smaller'
od -An -tx1 -N2 n.txt.gz
gunzip n.txt.gz; cmp n.txt numbers.txt; ck $? 0 'gunzip restores identical bytes'
gzip -c mixed.txt > mixed.gz; zcat mixed.gz | cmp - mixed.txt; ck $? 0 'gzip -c | zcat round trip'
gzip -9 -c numbers.txt | gunzip -c | md5sum
gzip -t mixed.gz; ck $? 0 'gzip -t'
printf 'not gzip data' > bad.gz; gunzip -t bad.gz 2>/dev/null; echo "gunzip -t on garbage: status $?"
gzip -c empty.txt | gunzip -c | wc -c

echo "--- bzip2"
bzip2 -c numbers.txt > n.bz2; bunzip2 -c n.bz2 | cmp - numbers.txt; ck $? 0 'bzip2 round trip'
od -An -c -N3 n.bz2

echo "--- tar"
mkdir -p src/sub/deep src/empty
echo "file a" > src/a.txt
echo "file b" > src/sub/b.txt
cp numbers.txt src/sub/deep/numbers.txt
ln -s a.txt src/link
chmod 600 src/sub/b.txt
touch -d '2010-05-06 07:08:09' src/a.txt
tar cf out.tar src; ck $? 0 'tar cf'
tar tf out.tar | sort
tar tvf out.tar | awk '{ print $1, $NF }' | sort -k2
mkdir x; tar xf out.tar -C x; ck $? 0 'tar xf -C'
for f in a.txt sub/b.txt sub/deep/numbers.txt; do cmp src/$f x/src/$f || echo "FAIL: $f differs"; done
echo "extracted: $(find x | sort | tr '\n' ' ')"
ck "$(readlink x/src/link)" a.txt 'symlink preserved'
stat -c '%a %n' x/src/sub/b.txt
stat -c '%Y %n' x/src/a.txt
tar czf out.tgz -C src .; ck $? 0 'tar czf'
od -An -tx1 -N2 out.tgz
tar tzf out.tgz | sort
mkdir y; (cd y && tar xzf ../out.tgz); diff -r src y > /dev/null; ck $? 0 'tgz round trip, diff -r clean'
tar cf - -C src a.txt sub | tar tf - | sort
tar xf out.tar -O src/a.txt
tar tf nonexistent.tar 2>/dev/null; echo "tar on missing archive: status $?"

echo "--- cpio"
(cd src && find . -type f | sort | cpio -o -H newc 2>/dev/null) > out.cpio
cpio -t < out.cpio 2>/dev/null | sort
mkdir z; (cd z && cpio -i -d < ../out.cpio 2>/dev/null); cmp z/sub/deep/numbers.txt numbers.txt; ck $? 0 'cpio round trip'

cd /; rm -rf $D
echo "archive: $fails failed"
exit $fails
