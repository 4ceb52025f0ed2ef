// SPDX-License-Identifier: GPL-2.0
/*
 * dfkv-bench's copy reference (copy.h): an inline "rep movsb", the
 * instruction the x86-64 kernel copies user memory with on ERMS CPUs, and
 * whether the running kernel does.
 */
#include <stdio.h>
#include <string.h>

#include "copy.h"

#if defined(__x86_64__) || defined(__i386__)
void copy_movsb(void *dst, const void *src, size_t n)
{
	__asm__ __volatile__("rep movsb"
		     : "+D" (dst), "+S" (src), "+c" (n)
		     : : "memory");
}

bool copy_movsb_ok(void)
{
	return true;
}
#else
void copy_movsb(void *dst, const void *src, size_t n)
{
	(void)dst;
	(void)src;
	(void)n;
	fprintf(stderr, "dfkv-bench: rep movsb exists on x86 only\n");
	__builtin_trap();
}

bool copy_movsb_ok(void)
{
	return false;
}
#endif

bool copy_kernel_uses_movsb(void)
{
	char line[4096];
	bool erms = false;
	FILE *f;

	if (!copy_movsb_ok())
		return false;
	f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return false;
	while (!erms && fgets(line, sizeof(line), f)) {
		char *tok, *save = NULL, *colon = strchr(line, ':');

		if (strncmp(line, "flags", 5) || !colon)
			continue;
		for (tok = strtok_r(colon + 1, " \t\n", &save); tok;
		     tok = strtok_r(NULL, " \t\n", &save))
			if (!strcmp(tok, "erms"))
				erms = true;
		break;
	}
	fclose(f);
	return erms;
}
