# text.sh: text tools: ls, cat, echo, printf, wc, sort, uniq, grep, sed,
# awk, find, xargs, cut, tr, head, tail, tee.
D=/tmp/bb-text
rm -rf $D; mkdir -p $D; cd $D || exit 1
fails=0
ck() { if [ "$1" = "$2" ]; then echo "$3: ok"; else echo "FAIL: $3: got [$1] want [$2]"; fails=$((fails + 1)); fi; }

mkdir -p tree/sub/deeper tree/empty
printf 'pear\napple\nfig\napple\nbanana\nfig\nfig\n' > tree/fruit.txt
printf 'alpha 1 x\nbeta 22 y\ngamma 333 z\ndelta 4444 w\n' > tree/table.txt
echo "deep file" > tree/sub/deeper/deep.txt
echo "sub file" > tree/sub/s.dat
: > tree/zero.bin
cat > people.csv <<EOT
name,age,city
alice,30,Paris
bob,25,Berlin
carol,35,Paris
dave,28,Rome
EOT

echo "--- ls"
ls -1 tree
ls -1a tree/sub
ls -1 tree/sub/deeper tree/empty
ls -1d tree/*.txt
ls -1F tree | sort
ls -1 tree/nonexistent 2>/dev/null; echo "ls missing: status $?"

echo "--- cat, echo, printf"
cat tree/sub/s.dat tree/sub/deeper/deep.txt
cat -n tree/fruit.txt | head -3
echo plain; echo -n "no newline"; echo " <- joined"
echo "tab\there"
echo -e "escape\ttab"
printf '%s|%5s|%-5s|%05d|%x|%o|%c|%%\n' str right left 42 255 8 Z
printf '%.3f %e\n' 3.14159 12345.678
printf '%s\n' multiple args each line
printf 'no args: [%s]\n'

echo "--- wc"
wc -l < tree/fruit.txt
wc -w < tree/table.txt
wc -c < tree/table.txt
wc -l tree/fruit.txt tree/table.txt | sed 's/^ *//'

echo "--- sort and uniq"
sort tree/fruit.txt | tr '\n' ' '; echo
sort -r tree/fruit.txt | tr '\n' ' '; echo
sort -u tree/fruit.txt | tr '\n' ' '; echo
sort -k2 -n -r tree/table.txt | head -2
sort -t, -k2 -n people.csv | head -3
sort tree/fruit.txt | uniq -c | sed 's/^ *//'
sort tree/fruit.txt | uniq -d
sort tree/fruit.txt | uniq -u

echo "--- grep"
grep apple tree/fruit.txt
grep -c fig tree/fruit.txt
grep -n '^b' tree/fruit.txt
grep -v -e fig -e apple tree/fruit.txt
grep -i PARIS people.csv | cut -d, -f1
grep -E 'al(ice|pha)' people.csv tree/table.txt
grep -r -l file tree | sort
grep -o '[0-9][0-9]*' tree/table.txt | tr '\n' ' '; echo
grep -q nothing_here tree/fruit.txt; echo "grep no match: status $?"
grep -w fig tree/fruit.txt | wc -l

echo "--- sed"
sed 's/a/A/' tree/fruit.txt | head -2
sed 's/a/A/g' tree/fruit.txt | head -2
sed -n '2,3p' tree/fruit.txt
sed '/fig/d' tree/fruit.txt
sed -e '1i\
HEADER' -e '$a\
FOOTER' tree/sub/s.dat
sed -n '/beta/,/gamma/p' tree/table.txt
sed 's/\([a-z]*\) \([0-9]*\).*/\2:\1/' tree/table.txt
echo "hello world" | sed 's/o/0/2'
cp tree/fruit.txt inplace.txt; sed -i 's/fig/FIG/' inplace.txt; grep -c FIG inplace.txt
echo "a.b.c" | sed 'y/abc/xyz/'

echo "--- awk"
awk '{ print $2 }' tree/table.txt
awk '{ s += $2 } END { print "sum", s, "rows", NR }' tree/table.txt
awk -F, 'NR > 1 && $3 == "Paris" { print $1 }' people.csv
awk -F, 'NR > 1 { c[$3]++ } END { for (k in c) print k, c[k] }' people.csv | sort
awk 'BEGIN { printf "%d %s %.2f\n", 7, "x", 2/3; print length("abcdef"), substr("abcdef", 2, 3), toupper("up"), index("hello", "ll") }'
awk 'BEGIN { n = split("a:b:c", arr, ":"); print n, arr[3] }'
awk '{ $2 = $2 * 2; print }' tree/table.txt | head -2
awk 'length($1) > 4' tree/table.txt
echo "x y z" | awk '{ print NF, $NF }'
awk 'BEGIN { print 10 % 3, -7 % 3; print int(-3.7), int("42abc") + 1 }'
awk 'function sq(v) { return v * v } BEGIN { print sq(12) }'
printf 'b 2\na 1\n' | awk '{ print $2 " " $1 | "sort" }'

echo "--- find"
find tree | sort
find tree -type f | sort
find tree -type d -name 'd*' | sort
find tree -name '*.txt' -o -name '*.dat' | sort
find tree ! -name '*.txt' -type f | sort
find tree -type f -size 0
find tree -maxdepth 1 -type f | sort
find tree -type f -exec wc -c {} \; | sort -k2 | sed 's/^ *//'
find tree -empty | sort

echo "--- xargs"
printf '1\n2\n3\n' | xargs echo items:
printf 'a b c d e\n' | xargs -n 2 echo pair:
find tree -name '*.txt' | sort | xargs cat | wc -l
printf 'x\0y z\0' | xargs -0 -n1 echo arg:
echo "one two" | xargs -I{} echo "[{}]"

echo "--- cut, tr"
cut -d, -f1,3 people.csv
cut -c1-3 tree/fruit.txt | sort -u | tr '\n' ' '; echo
echo "Hello World" | tr 'a-z' 'A-Z'
echo "Hello World" | tr -d 'lo'
echo "aaabbbccc" | tr -s 'ab'
echo "hello" | tr 'a-y' 'b-z'
printf 'a\tb c\n' | tr '\t ' '__'

echo "--- head, tail"
head -2 tree/fruit.txt
head -c 5 tree/table.txt; echo
tail -2 tree/fruit.txt
tail -n +6 tree/fruit.txt
tail -c 6 tree/table.txt
seq 1 100 | head -n 3 | tail -n 1

echo "--- tee"
echo "teed line" | tee t1.txt t2.txt | wc -c
echo "appended" | tee -a t1.txt > /dev/null
cat t1.txt t2.txt

echo "--- misc text"
printf 'b\na\n' | tac
echo "abc" | rev
printf 'l1\nl2\n' | nl | sed 's/^ *//'
printf 'one\ttwo\n' | expand -t 4 | od -c | head -1
echo "dup" | od -An -tx1
paste -d: tree/fruit.txt tree/fruit.txt | head -2
diff tree/fruit.txt inplace.txt > diff.out; echo "diff status $?"; grep -c '^[-+]fig\|^[-+]FIG' diff.out
cmp tree/fruit.txt tree/fruit.txt && echo "cmp same"
cmp -s tree/fruit.txt inplace.txt; echo "cmp differ: status $?"

cd /; rm -rf $D
echo "text: $fails failed"
exit $fails
