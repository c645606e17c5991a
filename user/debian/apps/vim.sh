# vim -es: an ex script editing a file (delete, substitute with groups,
# numeric sort, put), and Vim script writing a file.
set -e
cat > notes.txt <<'TXT'
# a comment to delete
zebra 3
apple 10
# another comment
mango 7
kiwi 1
TXT
cat > edit.vim <<'VIM'
g/^#/d
%s/\(\w\+\) \(\d\+\)/\2 \1/
sort n
$put ='total lines: ' . line('$')
1put! ='header'
%s/^/> /
wq
VIM
vim -es -u NONE -i NONE -N -S edit.vim notes.txt
cat notes.txt
vim -es -u NONE -i NONE -N -c 'let x = map(range(1, 5), "v:val * v:val")' -c 'call writefile([join(x, ","), string(reduce(x, {a, b -> a + b}))], "vim.out")' -c 'qa!'
cat vim.out
