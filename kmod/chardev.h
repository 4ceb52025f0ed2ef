/* SPDX-License-Identifier: GPL-2.0 */
/*
 * /dev/dfkv, the ioctl fast path for clients on the cache host.
 */
#ifndef _DFKV_CHARDEV_H
#define _DFKV_CHARDEV_H

int dfkv_chardev_init(void);
void dfkv_chardev_exit(void);

#endif /* _DFKV_CHARDEV_H */
