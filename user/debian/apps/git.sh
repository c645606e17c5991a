# git: init, add, commit, branch, a merge with a real merge commit, a
# conflict resolved by hand, log, gc and fsck. Dates and identities are
# fixed so every object id matches the host's; git re-executes itself
# for sub-commands (gc runs repack, pack-objects and prune).
set -e
export GIT_AUTHOR_NAME="Kiln Tester" GIT_AUTHOR_EMAIL=tester@kiln.invalid
export GIT_COMMITTER_NAME="Kiln Tester" GIT_COMMITTER_EMAIL=tester@kiln.invalid
export HOME=$PWD GIT_CONFIG_NOSYSTEM=1 GIT_PAGER=cat TZ=UTC
n=0
at() { n=$((n + 1)); export GIT_AUTHOR_DATE="2024-01-0$1T12:00:0${n}Z" GIT_COMMITTER_DATE="2024-01-0$1T12:00:0${n}Z"; }
git config --global init.defaultBranch main
git config --global gc.auto 0
git init -q repo
cd repo
for i in 1 2 3 4 5 6 7 8 9 10; do seq 1 $((i * 50)) > "file$i.txt"; done
printf 'line one\nline two\nline three\n' > README
at 1; git add . && git commit -q -m "initial: ten files and a README"
git checkout -q -b feature
echo "feature work" >> README
seq 1000 1100 > feature.txt
at 2; git add . && git commit -q -m "feature: extend README, add feature.txt"
sed -i 's/^5$/five/' file1.txt
at 3; git commit -q -am "feature: spell five"
git checkout -q main
sed -i 's/^line one$/line ONE/' README
at 4; git commit -q -am "main: capitalise line one"
at 5; git merge -q --no-ff -m "merge feature into main" feature
git log --format='%H %p %s' | cat
echo "merge parents: $(git rev-list --parents -n 1 HEAD | wc -w)"
cat README
git checkout -q -b conflict HEAD~1
echo "conflict side" > file2.txt
at 6; git commit -q -am "conflict: rewrite file2"
git checkout -q main
echo "main side" > file2.txt
at 7; git commit -q -am "main: rewrite file2"
if git merge -q conflict >/dev/null 2>&1; then echo "merge unexpectedly clean"; fi
echo "conflicted: $(git diff --name-only --diff-filter=U)"
echo "resolved" > file2.txt
git add file2.txt
at 8; git commit -q --no-edit
git log --graph --oneline --format='%h %s' | cat
git tag -a v1 -m "version one"
git branch -a | cat
git diff --stat HEAD~3 HEAD | tail -1
git show --stat --format='%an <%ae> %ad %s' --date=iso HEAD~1 | cat
git gc -q
echo "after gc: $(git count-objects -v | grep -E '^(count|in-pack|packs|size-garbage)' | tr '\n' ' ')"
git fsck --strict 2>&1 && echo "fsck clean"
git cat-file -p v1 | head -4
git rev-parse HEAD HEAD^{tree} v1
git archive --format=tar HEAD | tar -tf - | sort | tr '\n' ' '; echo
git clone -q . ../clone && git -C ../clone log --oneline | wc -l
git -C ../clone rev-parse HEAD
git stash list | wc -l
echo change >> README && git stash -q && git stash list | sed 's/:.*//' && git stash pop -q && git status --short
git describe --tags
git worktree add -q ../wt feature && git -C ../wt log -1 --format=%s && git worktree remove ../wt
git reflog | wc -l
