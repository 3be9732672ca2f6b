/* What io_uring itself allows for `iolab files --engine io_uring` (bench/files.py): the same
 * tree and phases as files_ref.c, each operation a ring entry with DEPTH in flight per thread,
 * as iolab keeps them, and no per-operation timing. THREADS threads, each with its own ring
 * (single issuer, deferred task work, as iolab's), create FILES empty files in DIR/t<k>/
 * (openat O_CREAT|O_EXCL, then on its completion a close of the descriptor), stat them
 * (statx), then delete them (unlinkat), a barrier between the phases. Prints "create <ops/s>",
 * "stat ...", "unlink ...". The kernel runs a ring's openat(O_CREAT), statx and unlinkat in an
 * io-wq worker: this loop's rates over files_ref.c's are what that hand-off costs, whoever
 * drives the ring. This file owns the ring loop; ref_common.h, shared with files_ref.c, the
 * threads and phases.
 *
 *   cc -O2 -pthread -o files_ring_ref bench/files_ring_ref.c -luring
 *   ./files_ring_ref DIR THREADS FILES [DEPTH]
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ref_common.h"

#define MAX_DEPTH 256
#define CLOSE_BIT (1ULL << 32)

enum op { CREATE, STAT, UNLINK };

static unsigned depth = 32;

static void fail(const char *what, const char *path, int err) {
    fprintf(stderr, "files_ring_ref: %s %s failed: %s\n", what, path, strerror(err));
    exit(1);
}

struct slot {
    char name[32];
    struct statx stx;
};

static struct io_uring_sqe *sqe_of(struct io_uring *ring) {
    struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
    if (!sqe)
        fail("get_sqe", "(the ring is full)", EBUSY);
    return sqe;
}

/* One phase over the thread's files, `depth` entries in flight. */
static void phase(struct io_uring *ring, int dirfd, enum op op, struct slot *slots) {
    unsigned free_slots[MAX_DEPTH], nfree = 0, in_flight = 0;
    for (unsigned s = 0; s < depth; s++)
        free_slots[nfree++] = s;
    long next = 0;
    while (next < files || in_flight > 0) {
        while (next < files && nfree > 0) {
            unsigned s = free_slots[--nfree];
            snprintf(slots[s].name, sizeof slots[s].name, "f%ld", next++);
            struct io_uring_sqe *sqe = sqe_of(ring);
            if (op == CREATE)
                io_uring_prep_openat(sqe, dirfd, slots[s].name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
            else if (op == STAT)
                io_uring_prep_statx(sqe, dirfd, slots[s].name, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS,
                                    &slots[s].stx);
            else
                io_uring_prep_unlinkat(sqe, dirfd, slots[s].name, 0);
            io_uring_sqe_set_data64(sqe, s);
            in_flight++;
        }
        int ret = io_uring_submit_and_wait(ring, 1);
        if (ret < 0)
            fail("submit_and_wait", "", -ret);
        struct io_uring_cqe *cqe;
        unsigned head, seen = 0;
        io_uring_for_each_cqe(ring, head, cqe) {
            seen++;
            unsigned s = (unsigned)(cqe->user_data & 0xffffffffu);
            if (cqe->res < 0)
                fail(op == CREATE ? (cqe->user_data & CLOSE_BIT ? "close" : "openat")
                                  : op == STAT ? "statx" : "unlinkat",
                     slots[s].name, -cqe->res);
            if (op == CREATE && !(cqe->user_data & CLOSE_BIT)) {
                struct io_uring_sqe *sqe = sqe_of(ring);
                io_uring_prep_close(sqe, cqe->res);
                io_uring_sqe_set_data64(sqe, s | CLOSE_BIT);
            } else {
                free_slots[nfree++] = s;
                in_flight--;
            }
        }
        io_uring_cq_advance(ring, seen);
    }
}

static void *work(void *arg) {
    long thread = (long)arg;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/t%ld", top, thread);
    if (mkdir(dir, 0755) != 0)
        fail("mkdir", dir, errno);
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY);
    if (dirfd < 0)
        fail("open", dir, errno);
    struct io_uring ring;
    int ret = io_uring_queue_init(2 * depth, &ring, IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN);
    if (ret < 0)
        fail("io_uring_queue_init", "", -ret);
    struct slot *slots = calloc(depth, sizeof *slots);
    mark(thread, 0);
    phase(&ring, dirfd, CREATE, slots);
    mark(thread, 1);
    phase(&ring, dirfd, STAT, slots);
    mark(thread, 2);
    phase(&ring, dirfd, UNLINK, slots);
    mark(thread, 3);
    io_uring_queue_exit(&ring);
    free(slots);
    close(dirfd);
    if (rmdir(dir) != 0)
        fail("rmdir", dir, errno);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: files_ring_ref DIR THREADS FILES_PER_THREAD [DEPTH]\n");
        return 2;
    }
    top = argv[1];
    long threads = atol(argv[2]);
    files = atol(argv[3]);
    if (argc == 5)
        depth = (unsigned)atoi(argv[4]);
    if (depth < 1 || depth > MAX_DEPTH) {
        fprintf(stderr, "files_ring_ref: DEPTH must be 1 to %d\n", MAX_DEPTH);
        return 2;
    }
    run_phases(threads, work);
    return 0;
}
