# files.sh: file tools: cp, mv, rm, mkdir -p, ln -s, chmod, touch -d,
# stat -c, du -k, df, readlink, realpath, truncate, dd, mkfifo.
D=/tmp/bb-files
rm -rf $D; mkdir -p $D; cd $D || exit 1
fails=0
ck() { if [ "$1" = "$2" ]; then echo "$3: ok"; else echo "FAIL: $3: got [$1] want [$2]"; fails=$((fails + 1)); fi; }
umask 022

echo "--- mkdir"
mkdir a; ck $? 0 'mkdir a'
mkdir a 2>/dev/null; ck $? 1 'mkdir existing fails'
mkdir -p a/b/c/d; ck $? 0 'mkdir -p nested'
mkdir -p a/b/c/d; ck $? 0 'mkdir -p existing is fine'
mkdir -m 700 private; stat -c '%a %F' private
ls -1R a | sed '/^$/d'

echo "--- cp"
echo "content one" > f1
cp f1 f2; ck "$(cat f2)" "content one" 'cp file'
cp f1 a/; ck "$(cat a/f1)" "content one" 'cp into dir'
cp -r a a_copy; find a_copy | sort
chmod 640 f1; cp -p f1 f3; stat -c '%a %s' f3
cp f1 f4; stat -c '%a' f4
cp nonexistent x 2>/dev/null; ck $? 1 'cp missing source fails'

echo "--- mv"
mv f2 moved; ck "$(cat moved) $(ls f2 2>/dev/null)" "content one " 'mv renames'
mv moved a/b/; ls -1 a/b
mv a_copy renamed_dir; ls -1d renamed_dir a_copy 2>/dev/null
echo new > over; mv over f4; ck "$(cat f4)" new 'mv overwrites'

echo "--- rm"
rm f4; ck "$(ls f4 2>/dev/null)" "" 'rm file'
rm a 2>/dev/null; ck $? 1 'rm dir without -r fails'
rm -f nonexistent; ck $? 0 'rm -f missing is fine'
rm -r renamed_dir; ck "$(ls -d renamed_dir 2>/dev/null)" "" 'rm -r dir'
rmdir a/b/c/d; ck $? 0 'rmdir empty'
rmdir a 2>/dev/null; ck $? 1 'rmdir non-empty fails'

echo "--- ln"
ln -s f1 sym; ck "$(readlink sym)" f1 'ln -s and readlink'
ck "$(cat sym)" "content one" 'read through symlink'
ln f1 hard; stat -c '%h' f1
ln -s /nonexistent/target dangling; ck "$(readlink dangling)" /nonexistent/target 'dangling symlink'
[ -e dangling ]; ck $? 1 'test -e dangling is false'
[ -L dangling ]; ck $? 0 'test -L dangling is true'
ln -sf f3 sym; ck "$(readlink sym)" f3 'ln -sf replaces'
ln -s a dirlink; ck "$(ls dirlink/ | head -1)" b 'ls through dir symlink'
ck "$(realpath dirlink/b)" "$D/a/b" 'realpath resolves'
ck "$(readlink -f sym)" "$D/f3" 'readlink -f'

echo "--- chmod"
touch m
chmod 755 m; stat -c '%a %A' m
chmod u-x,g=r,o= m; stat -c '%a %A' m
chmod +x m; stat -c '%a' m
chmod 4755 m; stat -c '%a %A' m
chmod -R 700 a; stat -c '%a' a a/b a/b/c
chmod 999 m 2>/dev/null; ck $? 1 'chmod invalid mode fails'

echo "--- touch"
touch -d '2001-02-03 04:05:06' t1; stat -c '%Y %y' t1 | sed 's/\.[0-9]* / /'
touch -d '1999-12-31 23:59:59' t2; stat -c '%Y' t2
touch -r t1 t3; stat -c '%Y' t3
touch -c nonexistent_c; ck "$(ls nonexistent_c 2>/dev/null)" "" 'touch -c does not create'
before=$(stat -c '%Y' t1); touch t1; after=$(stat -c '%Y' t1)
[ "$after" -gt "$before" ]; ck $? 0 'touch updates mtime to now'
touch -t 200001010000 t4; stat -c '%Y' t4

echo "--- stat"
printf '0123456789' > ten
stat -c '%s %a %F %n' ten
stat -c '%F' a sym dangling
stat -L -c '%F %s' sym
mkfifo pipe1; stat -c '%F %a' pipe1
stat -c '%u %g %U %G' ten
stat -c '%h' a
stat nonexistent 2>/dev/null; ck $? 1 'stat missing fails'

echo "--- dd, truncate, du"
dd if=/dev/zero of=blk bs=1024 count=16 2>/dev/null; stat -c '%s' blk
du -k blk
dd if=/dev/zero of=blk2 bs=4096 count=4 2>&1 | head -2
dd if=ten of=part bs=1 skip=2 count=5 2>/dev/null; cat part; echo
dd if=ten bs=3 count=2 2>/dev/null | wc -c
truncate -s 100 ten; stat -c '%s' ten
truncate -s 4 ten; cat ten; echo
mkdir dutree; dd if=/dev/zero of=dutree/x bs=4096 count=2 2>/dev/null; dd if=/dev/zero of=dutree/y bs=4096 count=3 2>/dev/null
du -k dutree/x dutree/y
du -s -k dutree/x
echo "sparse" > /dev/null; truncate -s 1M sparse; stat -c '%s' sparse; du -k sparse

echo "--- df"
df > df.out; ck $? 0 'df exits 0'
head -1 df.out | grep -c Filesystem
df -k /tmp > /dev/null; ck $? 0 'df -k /tmp'

echo "--- misc"
ck "$(basename /a/b/c.txt .txt)" c 'basename with suffix'
ck "$(dirname /a/b/c.txt)" /a/b 'dirname'
ck "$(cd a/b && pwd)" "$D/a/b" 'pwd'
mktemp -p . tmp.XXXXXX > mk.out; f=$(cat mk.out); [ -f "$f" ]; ck $? 0 'mktemp creates a file'
echo data > src; cp src dst; cmp src dst; ck $? 0 'cmp same files'
unlink dst; ck "$(ls dst 2>/dev/null)" "" 'unlink'
find . -type l | sort

cd /; rm -rf $D
echo "files: $fails failed"
exit $fails
