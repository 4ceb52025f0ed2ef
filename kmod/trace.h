/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dfkv's trace events (system "dfkv"), for perf, trace-cmd, bpftrace and
 * tracefs: a request's start and end (req.c), a cold read's and a
 * flush's payload I/O submitted and completed (tier.c), a record group
 * commit (disk.c), an eviction
 * (store.c) and a disk's state changes (tier.c).  The definitions are
 * made once, in trace.c.  Documentation/tuning.md shows how to use them.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM dfkv

#if !defined(_DFKV_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _DFKV_TRACE_H

#include <linux/tracepoint.h>
#include <linux/dfkv.h>

TRACE_EVENT(dfkv_req_start,
	    TP_PROTO(const char *node, u8 op, u64 tenant, u64 size, u8 transport),
	    TP_ARGS(node, op, tenant, size, transport),
	    TP_STRUCT__entry(__string(node, node)
			     __field(u64, tenant)
			     __field(u64, size)
			     __field(u8, op)
			     __field(u8, transport)),
	    TP_fast_assign(__assign_str(node, node);
			   __entry->tenant = tenant;
			   __entry->size = size;
			   __entry->op = op;
			   __entry->transport = transport;),
	    TP_printk("node=%s op=%u tenant=%016llx size=%llu transport=%u",
		      __get_str(node), __entry->op, __entry->tenant, __entry->size,
		      __entry->transport)
);

TRACE_EVENT(dfkv_req_end,
	    TP_PROTO(const char *node, u8 op, u64 tenant, u64 size, int status,
		     u8 transport, u64 ns),
	    TP_ARGS(node, op, tenant, size, status, transport, ns),
	    TP_STRUCT__entry(__string(node, node)
			     __field(u64, tenant)
			     __field(u64, size)
			     __field(u64, ns)
			     __field(int, status)
			     __field(u8, op)
			     __field(u8, transport)),
	    TP_fast_assign(__assign_str(node, node);
			   __entry->tenant = tenant;
			   __entry->size = size;
			   __entry->ns = ns;
			   __entry->status = status;
			   __entry->op = op;
			   __entry->transport = transport;),
	    TP_printk("node=%s op=%u tenant=%016llx size=%llu status=%d transport=%u ns=%llu",
		      __get_str(node), __entry->op, __entry->tenant, __entry->size,
		      __entry->status, __entry->transport, __entry->ns)
);

/* A block's payload going to (flush) or coming from (cold read) a disk. */
DECLARE_EVENT_CLASS(dfkv_io_submit,
		    TP_PROTO(const char *disk, u64 tenant, u64 len),
		    TP_ARGS(disk, tenant, len),
		    TP_STRUCT__entry(__string(disk, disk)
				     __field(u64, tenant)
				     __field(u64, len)),
		    TP_fast_assign(__assign_str(disk, disk);
				   __entry->tenant = tenant;
				   __entry->len = len;),
		    TP_printk("disk=%s tenant=%016llx len=%llu", __get_str(disk),
			      __entry->tenant, __entry->len)
);

DEFINE_EVENT(dfkv_io_submit, dfkv_cold_read_submit,
	     TP_PROTO(const char *disk, u64 tenant, u64 len),
	     TP_ARGS(disk, tenant, len));

DEFINE_EVENT(dfkv_io_submit, dfkv_flush_submit,
	     TP_PROTO(const char *disk, u64 tenant, u64 len),
	     TP_ARGS(disk, tenant, len));

DECLARE_EVENT_CLASS(dfkv_io_done,
		    TP_PROTO(const char *disk, u64 tenant, u64 len, int err, u64 ns),
		    TP_ARGS(disk, tenant, len, err, ns),
		    TP_STRUCT__entry(__string(disk, disk)
				     __field(u64, tenant)
				     __field(u64, len)
				     __field(u64, ns)
				     __field(int, err)),
		    TP_fast_assign(__assign_str(disk, disk);
				   __entry->tenant = tenant;
				   __entry->len = len;
				   __entry->ns = ns;
				   __entry->err = err;),
		    TP_printk("disk=%s tenant=%016llx len=%llu err=%d ns=%llu",
			      __get_str(disk), __entry->tenant, __entry->len, __entry->err,
			      __entry->ns)
);

DEFINE_EVENT(dfkv_io_done, dfkv_cold_read_done,
	     TP_PROTO(const char *disk, u64 tenant, u64 len, int err, u64 ns),
	     TP_ARGS(disk, tenant, len, err, ns));

DEFINE_EVENT(dfkv_io_done, dfkv_flush_done,
	     TP_PROTO(const char *disk, u64 tenant, u64 len, int err, u64 ns),
	     TP_ARGS(disk, tenant, len, err, ns));

/* ram_only: the RAM copy was dropped, the disk copy stays. */
TRACE_EVENT(dfkv_evict,
	    TP_PROTO(u64 tenant, u64 len, bool ram_only),
	    TP_ARGS(tenant, len, ram_only),
	    TP_STRUCT__entry(__field(u64, tenant)
			     __field(u64, len)
			     __field(bool, ram_only)),
	    TP_fast_assign(__entry->tenant = tenant;
			   __entry->len = len;
			   __entry->ram_only = ram_only;),
	    TP_printk("tenant=%016llx len=%llu ram_only=%d", __entry->tenant,
		      __entry->len, __entry->ram_only)
);

/*
 * A record group commit (disk.c): the updates it took, their records, the
 * units written, the flush before them and the unit writes, in ns.
 */
TRACE_EVENT(dfkv_rec_commit,
	    TP_PROTO(const char *disk, u32 updates, u32 records, u32 units,
		     u64 flush_ns, u64 write_ns, int err),
	    TP_ARGS(disk, updates, records, units, flush_ns, write_ns, err),
	    TP_STRUCT__entry(__string(disk, disk)
			     __field(u32, updates)
			     __field(u32, records)
			     __field(u32, units)
			     __field(u64, flush_ns)
			     __field(u64, write_ns)
			     __field(int, err)),
	    TP_fast_assign(__assign_str(disk, disk);
			   __entry->updates = updates;
			   __entry->records = records;
			   __entry->units = units;
			   __entry->flush_ns = flush_ns;
			   __entry->write_ns = write_ns;
			   __entry->err = err;),
	    TP_printk("disk=%s updates=%u records=%u units=%u flush_ns=%llu write_ns=%llu err=%d",
		      __get_str(disk), __entry->updates, __entry->records,
		      __entry->units, __entry->flush_ns, __entry->write_ns,
		      __entry->err)
);

/* event: enum dfkv_event (DISK_ADD, DISK_DEL, DISK_STATE). */
TRACE_EVENT(dfkv_disk_state,
	    TP_PROTO(const char *disk, u32 state, u32 event),
	    TP_ARGS(disk, state, event),
	    TP_STRUCT__entry(__string(disk, disk)
			     __field(u32, state)
			     __field(u32, event)),
	    TP_fast_assign(__assign_str(disk, disk);
			   __entry->state = state;
			   __entry->event = event;),
	    TP_printk("disk=%s state=%u event=%u", __get_str(disk),
		      __entry->state, __entry->event)
);

#endif /* _DFKV_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
