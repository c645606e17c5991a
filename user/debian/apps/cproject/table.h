#ifndef TABLE_H
#define TABLE_H
struct entry {
    const char *key;
    int value;
};
void table_sort(struct entry *t, int n);
unsigned table_hash(const struct entry *t, int n);
#endif
