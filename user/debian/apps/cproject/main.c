#include <stdio.h>
#include <string.h>
#include "stats.h"
#include "strutil.h"
#include "table.h"

int main(int argc, char **argv)
{
    double v[] = { 2, 4, 4, 4, 5, 5, 7, 9 };
    printf("mean %.3f stddev %.3f\n", mean(v, 8), stddev(v, 8));

    char word[64];
    for (int i = 1; i < argc; i++) {
        snprintf(word, sizeof word, "%s", argv[i]);
        str_reverse(word);
        printf("%s -> %s (%zu vowels)\n", argv[i], word, str_vowels(argv[i]));
    }

    struct entry t[] = { { "pear", 3 }, { "apple", 1 }, { "fig", 3 }, { "kiwi", 2 }, { "date", 1 } };
    table_sort(t, 5);
    for (int i = 0; i < 5; i++)
        printf("%s=%d%s", t[i].key, t[i].value, i < 4 ? " " : "\n");
    printf("hash %08x\n", table_hash(t, 5));
    return 0;
}
