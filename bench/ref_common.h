/* What files_ref.c and files_ring_ref.c share (cc finds this header beside them): the tree's
 * top directory and files per thread, the barrier and clock marks between the phases, and the
 * run of THREADS threads with the three rates it prints. Each program brings its own work(),
 * one thread's create, stat and unlink phases with a mark() before and after each.
 */
#ifndef REF_COMMON_H
#define REF_COMMON_H

#include <pthread.h>
#include <stdio.h>
#include <time.h>

static const char *top;
static long files;
static pthread_barrier_t barrier;
static struct timespec marks[4];

static double seconds(struct timespec a, struct timespec b) {
    return (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
}

/* Between phases: every thread done, then thread 0 reads the clock. */
static void mark(long thread, int index) {
    pthread_barrier_wait(&barrier);
    if (thread == 0)
        clock_gettime(CLOCK_MONOTONIC, &marks[index]);
    pthread_barrier_wait(&barrier);
}

/* THREADS threads run work((void *)k), k = 0 .., to their end; then each phase's rate, all
 * threads' files over its wall time from mark to mark: "create <ops/s>", "stat ...", "unlink ...". */
static void run_phases(long threads, void *(*work)(void *)) {
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
}

#endif
