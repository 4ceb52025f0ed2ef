/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _KSHIM_LINUX_STRING_H
#define _KSHIM_LINUX_STRING_H

#include <string.h>

#endif
