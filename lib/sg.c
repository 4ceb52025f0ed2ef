// SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT
/*
 * libdfkv scatter-gather loads (see sg.h): the caller's non-empty
 * buffers as the request's iovec array, their total as its length.
 */
#include "sg.h"

/*
 * Check a caller's dfkv_iov array and load its non-empty entries into
 * r->iov (allocated; the caller frees it after execute), their total
 * into *total.  A total of 0 is left for the caller to judge.
 */
static int iov_load(struct dfkv_req *r, const struct dfkv_iov *iov, size_t n,
		    uint64_t *total)
{
	uint64_t sum = 0;
	size_t k = 0;

	*total = 0;
	r->iov = NULL;
	r->iovcnt = 0;
	if (!iov || !n || n > DFKV_IOV_MAX)
		return DFKV_E_INVAL;
	for (size_t i = 0; i < n; i++) {
		if (!iov[i].len)
			continue;
		if (!dfkv_span_ok(iov[i].base, iov[i].len) ||
		    iov[i].len > (uint64_t)(SIZE_MAX / 2) - sum)
			return DFKV_E_INVAL;
		sum += iov[i].len;
		k++;
	}
	if (!k)
		return 0;
	r->iov = malloc(k * sizeof(*r->iov));
	if (!r->iov)
		return DFKV_E_NOMEM;
	for (size_t i = 0, j = 0; i < n; i++)
		if (iov[i].len)
			r->iov[j++] = (struct iovec){ iov[i].base,
						      (size_t)iov[i].len };
	r->iovcnt = (uint32_t)k;
	*total = sum;
	return 0;
}

/* A scatter-gather PUT request: 0 or the slot's failure. */
int dfkv_put_sg_load(struct dfkv_req *r, const struct dfkv_iov *iov,
		     size_t n)
{
	int s = iov_load(r, iov, n, &r->val_len);

	return s ? s : r->val_len ? 0 : DFKV_STATUS_INVALID;
}

/* A scatter-gather GET request. */
int dfkv_get_sg_load(struct dfkv_req *r, const struct dfkv_iov *iov,
		     size_t n)
{
	int s = iov_load(r, iov, n, &r->cap);

	return s ? s : r->cap ? 0 : DFKV_E_INVAL;
}
