/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * libdfkv peer health and the clock (health.c): a member a transport
 * failed to reach is skipped for the client's cooldown (its reads become
 * misses, its writes are dropped and counted by client.c).  Transports
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
/* A transport could not reach p: skip it for cooldown_ms. */
void dfkv_peer_failed(struct dfkv_client *c, struct dfkv_peer *p);
/* A peer that cannot be reached at all (no transport would take it). */
void dfkv_peer_disable(struct dfkv_peer *p);

#endif /* DFKV_LIB_HEALTH_H */
