/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dfkv's trace events (system "dfkv"), for perf, trace-cmd, bpftrace and
 * tracefs: a request's start, reply and end (req.c), a cold read's and a
 * flush's payload I/O submitted and completed (tier.c, flush.c), the
 * stage boundaries between them of an ack=disk PUT, a cold GET and a
 * PUT's receive into RAM over TCP (ops.c, store.c, tcp.c), a
 * record group commit and each record write it covered (disk.c), an
 * eviction (store.c) and a disk's state changes (tier.c).  Every event
 * of a request carries its key's hash, so a request's events are joined
 * by it.  The definitions are made once, in trace.c.
 * Documentation/tuning.md lists them and shows how to use them.
 */
#ifndef _DFKV_TRACE_KEY_H
#define _DFKV_TRACE_KEY_H
#include <linux/jhash.h>
#include <linux/dfkv.h>

/* The hash that joins a request's events: computed only when traced. */
static inline u32 dfkv_trace_key(const struct dfkv_key *key)
{
	return jhash(key, sizeof(*key), 0);
}
#endif /* _DFKV_TRACE_KEY_H */

#undef TRACE_SYSTEM
#define TRACE_SYSTEM dfkv

#if !defined(_DFKV_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _DFKV_TRACE_H

#include <linux/tracepoint.h>

TRACE_EVENT(dfkv_req_start,
	    TP_PROTO(const char *node, u8 op, const struct dfkv_key *key,
		     u64 size, u8 transport),
	    TP_ARGS(node, op, key, size, transport),
	    TP_STRUCT__entry(__string(node, node)
			     __field(u64, tenant)
			     __field(u64, size)
			     __field(u32, key)
			     __field(u8, op)
			     __field(u8, transport)),
	    TP_fast_assign(__assign_str(node, node);
			   __entry->tenant = key->tenant;
			   __entry->size = size;
			   __entry->key = dfkv_trace_key(key);
			   __entry->op = op;
			   __entry->transport = transport;),
	    TP_printk("node=%s op=%u tenant=%016llx size=%llu transport=%u key=%08x",
		      __get_str(node), __entry->op, __entry->tenant, __entry->size,
		      __entry->transport, __entry->key)
);

TRACE_EVENT(dfkv_req_end,
	    TP_PROTO(const char *node, u8 op, const struct dfkv_key *key,
		     u64 size, int status, u8 transport, u64 ns),
	    TP_ARGS(node, op, key, size, status, transport, ns),
	    TP_STRUCT__entry(__string(node, node)
			     __field(u64, tenant)
			     __field(u64, size)
			     __field(u64, ns)
			     __field(int, status)
			     __field(u32, key)
			     __field(u8, op)
			     __field(u8, transport)),
	    TP_fast_assign(__assign_str(node, node);
			   __entry->tenant = key->tenant;
			   __entry->size = size;
			   __entry->ns = ns;
			   __entry->status = status;
			   __entry->key = dfkv_trace_key(key);
			   __entry->op = op;
			   __entry->transport = transport;),
	    TP_printk("node=%s op=%u tenant=%016llx size=%llu status=%d transport=%u ns=%llu key=%08x",
		      __get_str(node), __entry->op, __entry->tenant, __entry->size,
		      __entry->status, __entry->transport, __entry->ns,
		      __entry->key)
);

/*
 * A stage boundary of one request, joined to it by key (its hash): the
 * reply decided (req.c; info: its status), a PUT's flush queued (info 0)
 * and an attempt of it started (info: earlier attempts), a cold GET's
 * read started (info: a LEASE started it) and its bios completed (info:
 * their error).
 */
DECLARE_EVENT_CLASS(dfkv_step,
		    TP_PROTO(const struct dfkv_key *key, u64 len, int info),
		    TP_ARGS(key, len, info),
		    TP_STRUCT__entry(__field(u64, len)
				     __field(int, info)
				     __field(u32, key)),
		    TP_fast_assign(__entry->len = len;
				   __entry->info = info;
				   __entry->key = dfkv_trace_key(key);),
		    TP_printk("key=%08x len=%llu info=%d", __entry->key,
			      __entry->len, __entry->info)
);

/*
 * The stage boundaries of a PUT received into RAM over TCP: part of its
 * receive reservation taken (ops.c, req.c; info 0), its entry charged to
 * the tenant (store.c; info 1 over quota), RAM slots (or a stage) bound
 * up to len (info: the error), the first and the last payload bytes in
 * (tcp.c; len: the bytes so far) and the value published (store.c; info
 * 1 when a flush follows).
 */
DEFINE_EVENT(dfkv_step, dfkv_put_reserve,
	     TP_PROTO(const struct dfkv_key *key, u64 len, int info),
	     TP_ARGS(key, len, info));

DEFINE_EVENT(dfkv_step, dfkv_put_charge,
	     TP_PROTO(const struct dfkv_key *key, u64 len, int info),
	     TP_ARGS(key, len, info));

DEFINE_EVENT(dfkv_step, dfkv_put_alloc,
	     TP_PROTO(const struct dfkv_key *key, u64 len, int info),
	     TP_ARGS(key, len, info));

DEFINE_EVENT(dfkv_step, dfkv_put_recv_start,
	     TP_PROTO(const struct dfkv_key *key, u64 len, int info),
	     TP_ARGS(key, len, info));

DEFINE_EVENT(dfkv_step, dfkv_put_recv_end,
	     TP_PROTO(const struct dfkv_key *key, u64 len, int info),
	     TP_ARGS(key, len, info));

DEFINE_EVENT(dfkv_step, dfkv_put_publish,
	     TP_PROTO(const struct dfkv_key *key, u64 len, int info),
	     TP_ARGS(key, len, info));

DEFINE_EVENT(dfkv_step, dfkv_req_reply,
	     TP_PROTO(const struct dfkv_key *key, u64 len, int info),
	     TP_ARGS(key, len, info));

DEFINE_EVENT(dfkv_step, dfkv_flush_queue,
	     TP_PROTO(const struct dfkv_key *key, u64 len, int info),
	     TP_ARGS(key, len, info));

DEFINE_EVENT(dfkv_step, dfkv_flush_start,
	     TP_PROTO(const struct dfkv_key *key, u64 len, int info),
	     TP_ARGS(key, len, info));

DEFINE_EVENT(dfkv_step, dfkv_load_start,
	     TP_PROTO(const struct dfkv_key *key, u64 len, int info),
	     TP_ARGS(key, len, info));

DEFINE_EVENT(dfkv_step, dfkv_cold_read_bios,
	     TP_PROTO(const struct dfkv_key *key, u64 len, int info),
	     TP_ARGS(key, len, info));

/*
 * The payload CRCs of a flush (computed while its bios are in flight) or
 * of a cold read (checked against the records): their ns, and -EBADMSG
 * when a read part does not match.
 */
DECLARE_EVENT_CLASS(dfkv_crc,
		    TP_PROTO(const struct dfkv_key *key, u64 len, u64 ns, int err),
		    TP_ARGS(key, len, ns, err),
		    TP_STRUCT__entry(__field(u64, len)
				     __field(u64, ns)
				     __field(int, err)
				     __field(u32, key)),
		    TP_fast_assign(__entry->len = len;
				   __entry->ns = ns;
				   __entry->err = err;
				   __entry->key = dfkv_trace_key(key);),
		    TP_printk("key=%08x len=%llu ns=%llu err=%d", __entry->key,
			      __entry->len, __entry->ns, __entry->err)
);

DEFINE_EVENT(dfkv_crc, dfkv_flush_crc,
	     TP_PROTO(const struct dfkv_key *key, u64 len, u64 ns, int err),
	     TP_ARGS(key, len, ns, err));

DEFINE_EVENT(dfkv_crc, dfkv_cold_read_crc,
	     TP_PROTO(const struct dfkv_key *key, u64 len, u64 ns, int err),
	     TP_ARGS(key, len, ns, err));

/* A block's payload going to (flush) or coming from (cold read) a disk. */
DECLARE_EVENT_CLASS(dfkv_io_submit,
		    TP_PROTO(const char *disk, const struct dfkv_key *key, u64 len),
		    TP_ARGS(disk, key, len),
		    TP_STRUCT__entry(__string(disk, disk)
				     __field(u64, tenant)
				     __field(u64, len)
				     __field(u32, key)),
		    TP_fast_assign(__assign_str(disk, disk);
				   __entry->tenant = key->tenant;
				   __entry->len = len;
				   __entry->key = dfkv_trace_key(key);),
		    TP_printk("disk=%s tenant=%016llx len=%llu key=%08x",
			      __get_str(disk), __entry->tenant, __entry->len,
			      __entry->key)
);

DEFINE_EVENT(dfkv_io_submit, dfkv_cold_read_submit,
	     TP_PROTO(const char *disk, const struct dfkv_key *key, u64 len),
	     TP_ARGS(disk, key, len));

DEFINE_EVENT(dfkv_io_submit, dfkv_flush_submit,
	     TP_PROTO(const char *disk, const struct dfkv_key *key, u64 len),
	     TP_ARGS(disk, key, len));

DECLARE_EVENT_CLASS(dfkv_io_done,
		    TP_PROTO(const char *disk, const struct dfkv_key *key, u64 len,
			     int err, u64 ns),
		    TP_ARGS(disk, key, len, err, ns),
		    TP_STRUCT__entry(__string(disk, disk)
				     __field(u64, tenant)
				     __field(u64, len)
				     __field(u64, ns)
				     __field(int, err)
				     __field(u32, key)),
		    TP_fast_assign(__assign_str(disk, disk);
				   __entry->tenant = key->tenant;
				   __entry->len = len;
				   __entry->ns = ns;
				   __entry->err = err;
				   __entry->key = dfkv_trace_key(key);),
		    TP_printk("disk=%s tenant=%016llx len=%llu err=%d ns=%llu key=%08x",
			      __get_str(disk), __entry->tenant, __entry->len, __entry->err,
			      __entry->ns, __entry->key)
);

DEFINE_EVENT(dfkv_io_done, dfkv_cold_read_done,
	     TP_PROTO(const char *disk, const struct dfkv_key *key, u64 len,
		      int err, u64 ns),
	     TP_ARGS(disk, key, len, err, ns));

DEFINE_EVENT(dfkv_io_done, dfkv_flush_done,
	     TP_PROTO(const char *disk, const struct dfkv_key *key, u64 len,
		      int err, u64 ns),
	     TP_ARGS(disk, key, len, err, ns));

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
 * A record group commit (disk.c): its number on the disk, the updates it
 * took, their records, the units written; flush_ns from its start to the
 * unit writes (the empty preflush, or the superblock write that raised
 * the record high-water mark, and patching the images), write_ns the
 * unit writes.
 */
TRACE_EVENT(dfkv_rec_commit,
	    TP_PROTO(const char *disk, u64 seq, u32 updates, u32 records,
		     u32 units, u64 flush_ns, u64 write_ns, int err),
	    TP_ARGS(disk, seq, updates, records, units, flush_ns, write_ns, err),
	    TP_STRUCT__entry(__string(disk, disk)
			     __field(u64, seq)
			     __field(u32, updates)
			     __field(u32, records)
			     __field(u32, units)
			     __field(u64, flush_ns)
			     __field(u64, write_ns)
			     __field(int, err)),
	    TP_fast_assign(__assign_str(disk, disk);
			   __entry->seq = seq;
			   __entry->updates = updates;
			   __entry->records = records;
			   __entry->units = units;
			   __entry->flush_ns = flush_ns;
			   __entry->write_ns = write_ns;
			   __entry->err = err;),
	    TP_printk("disk=%s seq=%llu updates=%u records=%u units=%u flush_ns=%llu write_ns=%llu err=%d",
		      __get_str(disk), __entry->seq, __entry->updates, __entry->records,
		      __entry->units, __entry->flush_ns, __entry->write_ns,
		      __entry->err)
);

/*
 * A flush's records were committed (or not: err) by record group seq of
 * the disk, the group's dfkv_rec_commit event.
 */
TRACE_EVENT(dfkv_rec_done,
	    TP_PROTO(const char *disk, const struct dfkv_key *key, u64 seq,
		     int err),
	    TP_ARGS(disk, key, seq, err),
	    TP_STRUCT__entry(__string(disk, disk)
			     __field(u64, seq)
			     __field(int, err)
			     __field(u32, key)),
	    TP_fast_assign(__assign_str(disk, disk);
			   __entry->seq = seq;
			   __entry->err = err;
			   __entry->key = dfkv_trace_key(key);),
	    TP_printk("disk=%s key=%08x seq=%llu err=%d", __get_str(disk),
		      __entry->key, __entry->seq, __entry->err)
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
