/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _KSHIM_LINUX_LIST_H
#define _KSHIM_LINUX_LIST_H

#include <linux/kernel.h>

struct list_head {
	struct list_head *next, *prev;
};

static inline void INIT_LIST_HEAD(struct list_head *h)
{
	h->next = h;
	h->prev = h;
}

static inline void __list_add(struct list_head *n, struct list_head *prev,
			      struct list_head *next)
{
	next->prev = n;
	n->next = next;
	n->prev = prev;
	prev->next = n;
}

static inline void list_add(struct list_head *n, struct list_head *h)
{
	__list_add(n, h, h->next);
}

static inline void list_add_tail(struct list_head *n, struct list_head *h)
{
	__list_add(n, h->prev, h);
}

static inline void list_del_init(struct list_head *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
	INIT_LIST_HEAD(e);
}

static inline void list_move(struct list_head *e, struct list_head *h)
{
	list_del_init(e);
	list_add(e, h);
}

static inline void list_move_tail(struct list_head *e, struct list_head *h)
{
	list_del_init(e);
	list_add_tail(e, h);
}

static inline bool list_empty(const struct list_head *h)
{
	return h->next == h;
}

#define list_entry(ptr, type, member)	container_of(ptr, type, member)
#define list_first_entry(h, type, member) list_entry((h)->next, type, member)
#define list_first_entry_or_null(h, type, member) \
	(list_empty(h) ? NULL : list_first_entry(h, type, member))
#define list_next_entry(pos, member) \
	list_entry((pos)->member.next, __typeof__(*(pos)), member)
#define list_for_each_entry(pos, h, member)				\
	for (pos = list_first_entry(h, __typeof__(*pos), member);	\
	     &pos->member != (h);					\
	     pos = list_next_entry(pos, member))

#endif
