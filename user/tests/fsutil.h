/*
 * File helpers shared by the file-system tests: remove a tree (using raw
 * getdents64, so it works the same under musl and Kiln) and create a file
 * with given contents.
 */
#ifndef KILN_TEST_FSUTIL_H
#define KILN_TEST_FSUTIL_H

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static UNUSED void rm_rf(const char *path)
{
    char sub[512];
    struct stat st;
    if (lstat(path, &st) != 0)
        return;
    if (!S_ISDIR(st.st_mode)) {
        unlink(path);
        return;
    }
    int fd = open(path, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return;
    char buf[4096];
    for (;;) {
        long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
        if (n <= 0)
            break;
        for (long off = 0; off < n;) {
            unsigned short reclen = *(unsigned short *)(buf + off + 16);
            const char *name = buf + off + 19;
            if (strcmp(name, ".") && strcmp(name, "..")) {
                snprintf(sub, sizeof sub, "%s/%s", path, name);
                rm_rf(sub);
            }
            off += reclen;
        }
    }
    close(fd);
    rmdir(path);
}

static UNUSED void mkfile(const char *p, const char *content)
{
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (content)
        write(fd, content, strlen(content));
    close(fd);
}

#endif
