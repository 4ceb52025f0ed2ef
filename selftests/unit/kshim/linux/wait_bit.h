/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _KSHIM_LINUX_WAIT_BIT_H
#define _KSHIM_LINUX_WAIT_BIT_H

#include <sched.h>
#include <linux/kernel.h>

/* Polling stand-in: wake_up_var() has nothing to wake. */
#define wait_var_event(var, cond) do {					\
	might_sleep();							\
	while (!(cond))							\
		sched_yield();						\
} while (0)
#define wake_up_var(var)	((void)(var))

#endif
