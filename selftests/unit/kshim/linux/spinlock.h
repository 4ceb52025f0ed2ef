/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _KSHIM_LINUX_SPINLOCK_H
#define _KSHIM_LINUX_SPINLOCK_H

#include <pthread.h>
#include <linux/kernel.h>

typedef struct {
	pthread_mutex_t m;
} spinlock_t;

static inline void spin_lock_init(spinlock_t *l)
{
	pthread_mutex_init(&l->m, NULL);
}

static inline void spin_lock(spinlock_t *l)
{
	pthread_mutex_lock(&l->m);
	kshim_locks_held++;
}

static inline void spin_unlock(spinlock_t *l)
{
	kshim_locks_held--;
	pthread_mutex_unlock(&l->m);
}

#endif
