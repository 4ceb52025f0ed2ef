/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Forced into every file cppcheck reads (make lint): the few macros of
 * system headers that shape control flow, which cppcheck does not read
 * (they are system headers), so that it parses the loops they make.
 */
#define mnl_attr_for_each_nested(attr, nest) \
	for ((attr) = mnl_attr_get_payload(nest); (attr); (attr) = NULL)
#define mnl_attr_for_each(attr, nlh, offset) \
	for ((attr) = mnl_nlmsg_get_payload_offset((nlh), (offset)); (attr); \
	     (attr) = NULL)
