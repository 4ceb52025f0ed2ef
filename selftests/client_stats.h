/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the client-side selftests read from libdfkv's own stats: the
 * requests a client sent over one transport, any other sample.
 */
#ifndef DFKV_SELFTEST_CLIENT_STATS_H
#define DFKV_SELFTEST_CLIENT_STATS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dfkv.h>

/*
 * The value of the sample of c's stats snapshot that pat names (its name
 * after "dfkv_client_", its labels, a space); 0 when there is none.
 */
static inline uint64_t client_stat(struct dfkv_client *c, const char *pat)
{
	static char buf[1 << 16];
	uint64_t len;
	const char *p;

	if (dfkv_stats_snapshot(c, buf, sizeof(buf) - 1, &len))
		return 0;
	buf[len] = 0;
	p = strstr(buf, pat);
	return p ? strtoull(p + strlen(pat), NULL, 10) : 0;
}

/* dfkv_client_requests_total{transport="..."} of c's stats snapshot. */
static inline uint64_t client_reqs(struct dfkv_client *c,
				   const char *transport)
{
	char pat[96];

	snprintf(pat, sizeof(pat), "requests_total{transport=\"%s\"} ",
		 transport);
	return client_stat(c, pat);
}

#endif
