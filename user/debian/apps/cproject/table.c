#include <stdlib.h>
#include <string.h>
#include "table.h"

static int by_value_then_key(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    if (x->value != y->value)
        return x->value < y->value ? -1 : 1;
    return strcmp(x->key, y->key);
}

void table_sort(struct entry *t, int n)
{
    qsort(t, n, sizeof *t, by_value_then_key);
}

unsigned table_hash(const struct entry *t, int n)
{
    unsigned h = 2166136261u;
    for (int i = 0; i < n; i++) {
        for (const char *p = t[i].key; *p; p++)
            h = (h ^ (unsigned char)*p) * 16777619u;
        h = (h ^ (unsigned)t[i].value) * 16777619u;
    }
    return h;
}
