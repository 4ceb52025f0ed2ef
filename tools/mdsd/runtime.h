/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mdsd's process-wide services (runtime.c): the log, the clocks and the
 * stop flag.  Every other mdsd file may use them; they call none of
 * mdsd's own files.
 */
#ifndef MDSD_RUNTIME_H
#define MDSD_RUNTIME_H

#include <stdatomic.h>
#include <stdint.h>

/* Set once, when mdsd shuts down (main.c); read by every thread. */
extern atomic_bool mdsd_stopping;

uint64_t now_mono_ms(void);
uint64_t now_wall_ms(void);
void logmsg(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
extern int log_level;	/* 0 errors+info, 1 verbose, 2 debug */

#define LOG_ERR		(-1)
#define LOG_INFO	0
#define LOG_VERBOSE	1
#define LOG_DEBUG	2

#endif /* MDSD_RUNTIME_H */
