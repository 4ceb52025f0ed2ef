// SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT
/*
 * libcurl opened on first use (curl_load.h): dlopen of its soname, one
 * dlsym per entry point, curl_global_init, all once under pthread_once.
 * The library stays loaded for the life of the process (as a linked one
 * would: curl_global_cleanup is not safe while another thread may still
 * use libcurl, and the process's exit frees it).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "curl_load.h"

#define CURL_SONAME	"libcurl.so.4"

struct dfkv_curl_api dfkv_curl;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_err[256];		/* "": loaded */

/* Each entry point: its field in dfkv_curl and its libcurl symbol. */
#define SYM(f) { (void **)&dfkv_curl.f, "curl_" #f }
static const struct {
	void **fn;
	const char *name;
} syms[] = {
	SYM(easy_init), SYM(easy_setopt), SYM(easy_perform),
	SYM(easy_getinfo), SYM(easy_reset), SYM(easy_cleanup),
	SYM(easy_strerror), SYM(slist_append), SYM(slist_free_all),
	SYM(multi_init), SYM(multi_add_handle), SYM(multi_remove_handle),
	SYM(multi_perform), SYM(multi_poll), SYM(multi_wakeup),
	SYM(multi_info_read), SYM(multi_cleanup),
};

static void load(void)
{
	CURLcode (*global_init)(long flags);
	CURLcode rc;
	void *h;

	h = dlopen(CURL_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(load_err, sizeof(load_err), "cannot load %s: %s",
			 CURL_SONAME, dlerror());
		return;
	}
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		*syms[i].fn = dlsym(h, syms[i].name);
		if (!*syms[i].fn) {
			snprintf(load_err, sizeof(load_err),
				 "%s has no %s (libcurl 7.85 or later needed)",
				 CURL_SONAME, syms[i].name);
			return;
		}
	}
	*(void **)&global_init = dlsym(h, "curl_global_init");
	rc = global_init ? global_init(CURL_GLOBAL_DEFAULT) : CURLE_FAILED_INIT;
	if (rc != CURLE_OK)
		snprintf(load_err, sizeof(load_err),
			 "libcurl's global initialisation failed (%d)", rc);
}

int dfkv_curl_load(char *why, size_t len)
{
	pthread_once(&load_once, load);
	if (!load_err[0])
		return 0;
	if (why && len)
		snprintf(why, len, "%s", load_err);
	return -1;
}
