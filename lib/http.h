/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * The one libcurl helper of dfkv's HTTP clients: libdfkv's discovery
 * (lib/discovery.c, a multi handle so that close wakes a long-poll),
 * mdsd's etcd backend (tools/mdsd/etcd.c, streams and TLS) and dfkvctl's
 * directory commands (tools/dfkvctl/members.c); its bounded buffer also
 * takes the request bodies of mdsd's HTTP server (tools/mdsd/http.c).  It owns the bounded reply
 * buffer, the options every request sets (URL, method, body, headers,
 * timeouts, http/https only, no signals), the bearer token header and one
 * blocking call.  libcurl is opened on first use (curl_load.h): every
 * function here but the buffer's needs dfkv_curl_load() to have
 * succeeded.  Internal to libdfkv; the tools link it from libdfkv.a.
 */
#ifndef DFKV_LIB_HTTP_H
#define DFKV_LIB_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "curl_load.h"

/* A reply body: NUL-terminated, at most max bytes (0: 16 MiB). */
struct dfkv_http_buf {
	char *p;
	size_t len, cap, max;
};

/* Append n bytes; false (nothing appended) past max or out of memory. */
bool dfkv_http_buf_add(struct dfkv_http_buf *b, const char *data, size_t n);
/* Empty the body, keeping the memory. */
void dfkv_http_buf_clear(struct dfkv_http_buf *b);
void dfkv_http_buf_free(struct dfkv_http_buf *b);
/* CURLOPT_WRITEFUNCTION into the struct dfkv_http_buf at ud. */
size_t dfkv_http_write_cb(char *ptr, size_t size, size_t nmemb, void *ud);

struct dfkv_http_req {
	const char *method;		/* "GET", "PUT", "POST", "DELETE" */
	const char *url;
	const char *body;		/* NULL: none */
	struct curl_slist *hdrs;	/* NULL: none */
	long connect_timeout_ms;
	long timeout_ms;
};

/* Set h (fresh or reset) up for req, the reply going into out. */
void dfkv_http_setup(CURL *h, const struct dfkv_http_req *req,
		     struct dfkv_http_buf *out);
/*
 * req on an easy handle of its own, blocking: the transfer's result, and
 * the HTTP status in *status (0 when there was none).  out is cleared.
 */
CURLcode dfkv_http_call(const struct dfkv_http_req *req,
			struct dfkv_http_buf *out, long *status);

/*
 * Append "Authorization: Bearer <token>" of the token file at path
 * (token.c's rules) to *hdrs.  0, -ENOMEM, or dfkv_token_read()'s -errno
 * with its sentence in why.  The token leaves no copy on the stack.
 */
int dfkv_http_bearer(struct curl_slist **hdrs, const char *path, char *why,
		     size_t whylen);
/* Wipe (tokens) and free a header list. */
void dfkv_http_hdrs_free(struct curl_slist *hdrs);

#endif /* DFKV_LIB_HTTP_H */
