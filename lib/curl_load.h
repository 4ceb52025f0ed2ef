/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * libcurl, opened on the first HTTP request rather than at program start.
 * Only discovery (lib/discovery.c), mdsd's etcd backend and dfkvctl's
 * directory commands speak HTTP; linking libcurl would load it and its 30
 * dependencies (GnuTLS, Kerberos, LDAP, SSH, ...) into every program
 * that links libdfkv, dfkvctl's netlink commands included, for nothing.
 * dfkv_curl_load() dlopens libcurl.so.4 once, resolves the entry points
 * dfkv uses into dfkv_curl, and runs curl_global_init; callers use
 * dfkv_curl.NAME where they would call curl_NAME.  Internal to libdfkv;
 * the tools link it from libdfkv.a.
 */
#ifndef DFKV_LIB_CURL_LOAD_H
#define DFKV_LIB_CURL_LOAD_H

#include <stddef.h>

#include <curl/curl.h>

struct dfkv_curl_api {
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *h, CURLoption opt, ...);
	CURLcode (*easy_perform)(CURL *h);
	CURLcode (*easy_getinfo)(CURL *h, CURLINFO info, ...);
	void (*easy_reset)(CURL *h);
	void (*easy_cleanup)(CURL *h);
	const char *(*easy_strerror)(CURLcode rc);
	struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
	void (*slist_free_all)(struct curl_slist *l);
	CURLM *(*multi_init)(void);
	CURLMcode (*multi_add_handle)(CURLM *m, CURL *h);
	CURLMcode (*multi_remove_handle)(CURLM *m, CURL *h);
	CURLMcode (*multi_perform)(CURLM *m, int *running);
	CURLMcode (*multi_poll)(CURLM *m, struct curl_waitfd *fds,
				unsigned int nfds, int timeout_ms, int *numfds);
	CURLMcode (*multi_wakeup)(CURLM *m);
	CURLMsg *(*multi_info_read)(CURLM *m, int *left);
	CURLMcode (*multi_cleanup)(CURLM *m);
};

/* The entry points; valid once dfkv_curl_load() has returned 0. */
extern struct dfkv_curl_api dfkv_curl;

/*
 * Load libcurl and initialise it, once per process (thread-safe; later
 * calls return the first one's result).  0, or -1 with the reason
 * (dlerror's, or curl_global_init's) in why.
 */
int dfkv_curl_load(char *why, size_t len);

#endif /* DFKV_LIB_CURL_LOAD_H */
