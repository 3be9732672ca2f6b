/* The limit for `iolab files` (bench/files.py): a bare loop of the same system calls with no
 * per-operation timing. THREADS threads each create FILES empty files in their own directory
 * DIR/t<k>/ (openat O_CREAT|O_EXCL + close), then stat them (fstatat), then delete them
 * (unlinkat), a barrier between the phases; each phase's wall time, from the barrier before
 * it to the last thread done, gives its rate. Prints "create <ops/s>", "stat ...", "unlink ...".
 * This file owns the loop; ref_common.h, shared with files_ring_ref.c, the threads and phases.
 *
 *   cc -O2 -pthread -o files_ref bench/files_ref.c && ./files_ref DIR THREADS FILES
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ref_common.h"

static void fail(const char *what, const char *path) {
    perror(what);
    fprintf(stderr, "files_ref: %s %s failed\n", what, path);
    exit(1);
}

static void *work(void *arg) {
    long thread = (long)arg;
    char dir[4096], name[64];
    snprintf(dir, sizeof dir, "%s/t%ld", top, thread);
    if (mkdir(dir, 0755) != 0)
        fail("mkdir", dir);
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY);
    if (dirfd < 0)
        fail("open", dir);
    struct stat st;
    mark(thread, 0);
    for (long i = 0; i < files; i++) {
        snprintf(name, sizeof name, "f%ld", i);
        int fd = openat(dirfd, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
        if (fd < 0 || close(fd) != 0)
            fail("create", name);
    }
    mark(thread, 1);
    for (long i = 0; i < files; i++) {
        snprintf(name, sizeof name, "f%ld", i);
        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            fail("fstatat", name);
    }
    mark(thread, 2);
    for (long i = 0; i < files; i++) {
        snprintf(name, sizeof name, "f%ld", i);
        if (unlinkat(dirfd, name, 0) != 0)
            fail("unlinkat", name);
    }
    mark(thread, 3);
    close(dirfd);
    if (rmdir(dir) != 0)
        fail("rmdir", dir);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: files_ref DIR THREADS FILES_PER_THREAD\n");
        return 2;
    }
    top = argv[1];
    long threads = atol(argv[2]);
    files = atol(argv[3]);
    run_phases(threads, work);
    return 0;
}
