// SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT
/*
 * libdfkv status names and version: dfkv_strerror() covers every enum
 * dfkv_status of the uapi header and every enum dfkv_error of the library.
 */
#include "util.h"

#ifndef DFKV_VERSION
#define DFKV_VERSION "0.0.0-unversioned"
#endif

DFKV_API const char *dfkv_version(void)
{
	return DFKV_VERSION;
}

DFKV_API const char *dfkv_strerror(int status)
{
	switch (status) {
	case DFKV_STATUS_OK:		return "ok";
	case DFKV_STATUS_NOT_FOUND:	return "not found";
	case DFKV_STATUS_CACHE_FULL:	return "cache full";
	case DFKV_STATUS_IO_ERROR:	return "node I/O error";
	case DFKV_STATUS_INVALID:	return "invalid request";
	case DFKV_STATUS_QUOTA_EXCEEDED: return "tenant quota exceeded";
	case DFKV_STATUS_BUSY:		return "node busy";
	case DFKV_STATUS_UNSUPPORTED:	return "unsupported operation";
	case DFKV_STATUS_TOO_LARGE:	return "value too large";
	case DFKV_STATUS_LEASE_EXPIRED:	return "lease expired";
	case DFKV_STATUS_FORBIDDEN:	return "not authorized for the tenant";
	case DFKV_E_INVAL:		return "invalid argument";
	case DFKV_E_NOMEM:		return "out of memory";
	case DFKV_E_RANGE:		return "output buffer too small";
	case DFKV_E_UNAVAILABLE:	return "node unavailable";
	case DFKV_E_TIMEOUT:		return "timed out";
	case DFKV_E_PROTO:		return "protocol error";
	case DFKV_E_NOT_RUN:		return "not run";
	case DFKV_E_MEMBERS:		return "bad members list";
	case DFKV_E_NODEV:		return "no local dfkv node, or no RDMA device";
	case DFKV_E_SYS:		return "system error";
	case DFKV_E_AUTH:		return "mdsd token refused, or token or secret file unusable";
	case DFKV_E_CANCELLED:		return "cancelled";
	default:			return "unknown status";
	}
}
