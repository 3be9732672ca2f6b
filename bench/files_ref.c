/* The limit for `iolab files` (bench/files.py): a bare loop of the same system calls with no
 * per-operation timing. THREADS threads each create FILES empty files in their own directory
 * DIR/t<k>/ (openat O_CREAT|O_EXCL + close), then stat them (fstatat), then delete them
 * (unlinkat), a barrier between the phases; each phase's wall time, from the barrier before
 * it to the last thread done, gives its rate. Prints "create <ops/s>", "stat ...", "unlink ...".
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

static const char *top;
static long files;
static pthread_barrier_t barrier;
static struct timespec marks[4];

static double seconds(struct timespec a, struct timespec b) {
    return (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
}

static void fail(const char *what, const char *path) {
    perror(what);
    fprintf(stderr, "files_ref: %s %s failed\n", what, path);
    exit(1);
}

/* Between phases: every thread done, then thread 0 reads the clock. */
static void mark(long thread, int index) {
    pthread_barrier_wait(&barrier);
    if (thread == 0)
        clock_gettime(CLOCK_MONOTONIC, &marks[index]);
    pthread_barrier_wait(&barrier);
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
    pthread_t ids[threads];
    pthread_barrier_init(&barrier, NULL, (unsigned)threads);
    for (long t = 0; t < threads; t++)
        pthread_create(&ids[t], NULL, work, (void *)t);
    for (long t = 0; t < threads; t++)
        pthread_join(ids[t], NULL);
    double total = (double)threads * files;
    printf("create %.1f\n", total / seconds(marks[0], marks[1]));
    printf("stat %.1f\n", total / seconds(marks[1], marks[2]));
    printf("unlink %.1f\n", total / seconds(marks[2], marks[3]));
    return 0;
}
