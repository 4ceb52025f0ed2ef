// SPDX-License-Identifier: GPL-2.0
/*
 * mdsd's request threads: two FIFOs of jobs (urgent, then the others)
 * under one lock, run by a fixed pool of threads (--http-threads).
 * http.c queues every request there (its connection suspended
 * meanwhile), so libmicrohttpd's thread never waits for the backend.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "jobs.h"
#include "runtime.h"

struct jobs {
	pthread_mutex_t lock;
	pthread_cond_t work;		/* a job queued, or stop */
	pthread_cond_t idle;		/* a job finished */
	struct fifo {
		struct job *head, **tail;
	} fifo[2];			/* [1]: the urgent jobs */
	unsigned int running;		/* jobs being run */
	bool stop;
	unsigned int n;
	pthread_t t[];
};

/* The next job, urgent first, or NULL (under q->lock). */
static struct job *next_job(struct jobs *q)
{
	for (int u = 1; u >= 0; u--) {
		struct fifo *f = &q->fifo[u];
		struct job *j = f->head;

		if (j) {
			f->head = j->next;
			if (!f->head)
				f->tail = &f->head;
			return j;
		}
	}
	return NULL;
}

static void *jobs_main(void *arg)
{
	struct jobs *q = arg;

	pthread_mutex_lock(&q->lock);
	for (;;) {
		struct job *j = next_job(q);

		if (!j && q->stop)
			break;
		if (!j) {
			pthread_cond_wait(&q->work, &q->lock);
			continue;
		}
		q->running++;
		pthread_mutex_unlock(&q->lock);
		j->fn(j);
		pthread_mutex_lock(&q->lock);
		q->running--;
		pthread_cond_broadcast(&q->idle);
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

struct jobs *jobs_start(unsigned int n)
{
	struct jobs *q = calloc(1, sizeof(*q) + n * sizeof(q->t[0]));
	int err;

	if (!q)
		return NULL;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->work, NULL);
	pthread_cond_init(&q->idle, NULL);
	q->fifo[0].tail = &q->fifo[0].head;
	q->fifo[1].tail = &q->fifo[1].head;
	for (; q->n < n; q->n++) {
		err = pthread_create(&q->t[q->n], NULL, jobs_main, q);
		if (err) {
			logmsg(LOG_ERR, "http: no request thread: %s",
			       strerror(err));
			jobs_stop(q);
			return NULL;
		}
	}
	return q;
}

void jobs_queue(struct jobs *q, struct job *j, bool urgent)
{
	struct fifo *f = &q->fifo[urgent];

	pthread_mutex_lock(&q->lock);
	j->next = NULL;
	*f->tail = j;
	f->tail = &j->next;
	pthread_cond_signal(&q->work);
	pthread_mutex_unlock(&q->lock);
}

void jobs_drain(struct jobs *q)
{
	pthread_mutex_lock(&q->lock);
	while (q->fifo[0].head || q->fifo[1].head || q->running)
		pthread_cond_wait(&q->idle, &q->lock);
	pthread_mutex_unlock(&q->lock);
}

void jobs_stop(struct jobs *q)
{
	if (!q)
		return;
	jobs_drain(q);
	pthread_mutex_lock(&q->lock);
	q->stop = true;
	pthread_cond_broadcast(&q->work);
	pthread_mutex_unlock(&q->lock);
	for (unsigned int i = 0; i < q->n; i++)
		pthread_join(q->t[i], NULL);
	pthread_cond_destroy(&q->work);
	pthread_cond_destroy(&q->idle);
	pthread_mutex_destroy(&q->lock);
	free(q);
}
