// SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT
/*
 * libdfkv peer health and the clock (see health.h): each peer's
 * down_until_ms and down_status, set by the transports when a member
 * fails and read by the client before it routes a request there.
 */
#include <time.h>

#include "client.h"
#include "health.h"

uint64_t dfkv_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

bool dfkv_peer_usable(struct dfkv_client *c, struct dfkv_peer *p)
{
	(void)c;
	return dfkv_now_ms() >= atomic_load(&p->down_until_ms);
}

void dfkv_peer_failed(struct dfkv_client *c, struct dfkv_peer *p, int status)
{
	atomic_store(&p->down_status, status == DFKV_E_AUTH ? DFKV_E_AUTH :
		     DFKV_E_UNAVAILABLE);
	atomic_store(&p->down_until_ms, dfkv_now_ms() + c->opt.cooldown_ms);
}

int dfkv_peer_down_status(struct dfkv_peer *p)
{
	return atomic_load(&p->down_status);
}

void dfkv_peer_disable(struct dfkv_peer *p)
{
	atomic_store(&p->down_status, DFKV_E_UNAVAILABLE);
	atomic_store(&p->down_until_ms, UINT64_MAX);
}
