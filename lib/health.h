/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * libdfkv peer health and the clock (health.c): a member a transport
 * failed to reach is skipped for the client's cooldown (its reads become
 * misses, its writes are dropped and counted by client.c), remembering
 * whether it refused the handshake (the cause of those misses).  Transports
 * report failures here; nothing here calls back into the client.
 */
#ifndef DFKV_LIB_HEALTH_H
#define DFKV_LIB_HEALTH_H

#include <stdbool.h>
#include <stdint.h>

struct dfkv_client;
struct dfkv_peer;

/* CLOCK_MONOTONIC in milliseconds. */
uint64_t dfkv_now_ms(void);
/* The peer is not cooling down. */
bool dfkv_peer_usable(struct dfkv_client *c, struct dfkv_peer *p);
/*
 * A transport could not reach p (status DFKV_E_AUTH: p failed the
 * handshake, refused our AUTH or did not prove itself; anything else:
 * unreachable): skip it for cooldown_ms.
 */
void dfkv_peer_failed(struct dfkv_client *c, struct dfkv_peer *p, int status);
/*
 * Why p is skipped, as the status of a request it could not take:
 * DFKV_E_AUTH when its last failure was a handshake, else
 * DFKV_E_UNAVAILABLE.
 */
int dfkv_peer_down_status(struct dfkv_peer *p);
/* A peer that cannot be reached at all (no transport would take it). */
void dfkv_peer_disable(struct dfkv_peer *p);

#endif /* DFKV_LIB_HEALTH_H */
