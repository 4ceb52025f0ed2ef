// SPDX-License-Identifier: GPL-2.0
/*
 * mdsd runtime: the log (one line a message on stderr, serialised between
 * threads, filtered by log_level), the monotonic and wall clocks in
 * milliseconds, and the stop flag main.c sets at shutdown.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "runtime.h"

atomic_bool mdsd_stopping;
int log_level;

uint64_t now_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

uint64_t now_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void logmsg(int level, const char *fmt, ...)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	va_list ap;

	if (level > log_level)
		return;
	pthread_mutex_lock(&lock);
	fprintf(stderr, "mdsd: %s", level == LOG_ERR ? "error: " : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	pthread_mutex_unlock(&lock);
}
