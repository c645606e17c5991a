# make and gcc: build the small C project in a copy (parallel make, a
# static library with ar), run the result, then check that a second make
# has nothing to do and that touching a header rebuilds what uses it.
set -e
cp -r "$APPS/cproject" proj
cd proj
make -s -j2
./app kiln debian reverse
sha256sum app main.o stats.o table.o lib/libstrutil.a | cut -c1-16 | tr "\n" " "; echo
ar t lib/libstrutil.a | sort | tr '\n' ' '; echo
nm app | grep -E ' T (main|mean|stddev|str_reverse|str_vowels|table_sort|table_hash)$' | sed 's/^[0-9a-f]* //' | sort | tr '\n' ' '; echo
make -q && echo "up to date"
touch stats.h
make -q || echo "stale after touching stats.h"
make -j2 | sort
make -s clean && ls | sort | tr '\n' ' '; echo
