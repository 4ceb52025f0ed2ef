// SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT
/*
 * The libcurl helper shared by discovery, mdsd's etcd backend and dfkvctl
 * (http.h): reply buffer, request options, bearer header, blocking call.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "token.h"

#define HTTP_BODY_MAX	(16u << 20)

bool dfkv_http_buf_add(struct dfkv_http_buf *b, const char *data, size_t n)
{
	size_t max = b->max ? b->max : HTTP_BODY_MAX;

	if (n > max || b->len > max - n)
		return false;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *p;

		while (cap < b->len + n + 1)
			cap *= 2;
		if (cap > max + 1)
			cap = max + 1;
		p = realloc(b->p, cap);
		if (!p)
			return false;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
	return true;
}

void dfkv_http_buf_clear(struct dfkv_http_buf *b)
{
	b->len = 0;
	if (b->p)
		b->p[0] = '\0';
}

void dfkv_http_buf_free(struct dfkv_http_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

size_t dfkv_http_write_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
	size_t n = size * nmemb;

	return dfkv_http_buf_add(ud, ptr, n) ? n : 0;	/* 0 aborts */
}

void dfkv_http_setup(CURL *h, const struct dfkv_http_req *req,
		     struct dfkv_http_buf *out)
{
	dfkv_curl.easy_setopt(h, CURLOPT_URL, req->url);
	dfkv_curl.easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
#if LIBCURL_VERSION_NUM >= 0x075500
	dfkv_curl.easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
	dfkv_curl.easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, req->connect_timeout_ms);
	dfkv_curl.easy_setopt(h, CURLOPT_TIMEOUT_MS, req->timeout_ms);
	dfkv_curl.easy_setopt(h, CURLOPT_WRITEFUNCTION, dfkv_http_write_cb);
	dfkv_curl.easy_setopt(h, CURLOPT_WRITEDATA, out);
	dfkv_curl.easy_setopt(h, CURLOPT_CUSTOMREQUEST, req->method);
	if (req->hdrs)
		dfkv_curl.easy_setopt(h, CURLOPT_HTTPHEADER, req->hdrs);
	if (req->body) {
		dfkv_curl.easy_setopt(h, CURLOPT_POSTFIELDS, req->body);
		dfkv_curl.easy_setopt(h, CURLOPT_POSTFIELDSIZE,
				 (long)strlen(req->body));
	}
}

CURLcode dfkv_http_call(const struct dfkv_http_req *req,
			struct dfkv_http_buf *out, long *status)
{
	CURLcode rc;
	CURL *h;

	*status = 0;
	dfkv_http_buf_clear(out);
	h = dfkv_curl.easy_init();
	if (!h)
		return CURLE_OUT_OF_MEMORY;
	dfkv_http_setup(h, req, out);
	rc = dfkv_curl.easy_perform(h);
	if (rc == CURLE_OK)
		dfkv_curl.easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
	dfkv_curl.easy_cleanup(h);
	return rc;
}

int dfkv_http_bearer(struct curl_slist **hdrs, const char *path, char *why,
		     size_t whylen)
{
	char tok[DFKV_TOKEN_MAX + 1], hdr[DFKV_TOKEN_MAX + 32];
	struct curl_slist *l;
	int err;

	err = dfkv_token_read(path, tok, sizeof(tok), why, whylen);
	if (err)
		return err;
	snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s", tok);
	l = dfkv_curl.slist_append(*hdrs, hdr);
	explicit_bzero(tok, sizeof(tok));
	explicit_bzero(hdr, sizeof(hdr));
	if (!l)
		return -ENOMEM;
	*hdrs = l;
	return 0;
}

void dfkv_http_hdrs_free(struct curl_slist *hdrs)
{
	for (struct curl_slist *l = hdrs; l; l = l->next)
		explicit_bzero(l->data, strlen(l->data));
	dfkv_curl.slist_free_all(hdrs);
}
