/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _KSHIM_LINUX_ERRNO_H
#define _KSHIM_LINUX_ERRNO_H

/* glibc's <errno.h> reaches here too: give it the uapi codes. */
#include <asm/errno.h>

#endif
