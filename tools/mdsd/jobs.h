/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mdsd's request threads (jobs.c): a fixed pool of threads running
 * queued jobs in order (the urgent ones first), so that a blocking call
 * (an etcd request) holds one of them and never libmicrohttpd's own
 * thread.
 */
#ifndef MDSD_JOBS_H
#define MDSD_JOBS_H

#include <stdbool.h>

/* A job, embedded in what it works on. */
struct job {
	struct job *next;
	void (*fn)(struct job *j);
};

struct jobs;

/* n threads; NULL on failure. */
struct jobs *jobs_start(unsigned int n);
/*
 * Run j->fn(j) on one of the threads, after the jobs queued before it;
 * urgent: before every job queued not urgent.
 */
void jobs_queue(struct jobs *q, struct job *j, bool urgent);
/* Return once every job queued has run. */
void jobs_drain(struct jobs *q);
/* Drain, end the threads, free q (NULL: nothing). */
void jobs_stop(struct jobs *q);

#endif /* MDSD_JOBS_H */
