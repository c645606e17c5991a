#ifndef STRUTIL_H
#define STRUTIL_H
#include <stddef.h>
void str_reverse(char *s);
size_t str_vowels(const char *s);
#endif
