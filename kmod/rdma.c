// SPDX-License-Identifier: GPL-2.0
/*
 * In-kernel RDMA server of wire epoch 7 (SPEC.md section 3).
 *
 * Listeners are rdma_cm ids of a node, created in the node's network
 * namespace; listener.c keeps the node's listeners and connections and
 * the order of their shutdown.  A connect request carries the client's HELLO in its private
 * data; the server answers with the negotiated one in the accept (or the
 * reject).  Each connection has an RC QP on a CQ from the device's pool
 * (ib_cq_pool_get, polled from a workqueue) and a protection domain shared
 * by every connection of the device (struct rdma_dev, refcounted).  Server
 * memory is only ever addressed with the device's local DMA key: receive
 * and reply buffers are DMA-mapped once per connection, store pages per
 * transfer round; nothing is registered per request.
 *
 * A request is one SEND into one of `depth` posted receives.  Its handling
 * runs on dfkv_rdma_wq (struct rdma_cmd, a pool of twice the depth, each
 * embedding the struct dfkv_req the executor of req.c runs), so a
 * connection executes its pipelined requests concurrently; replies are
 * posted strictly in request order, each together with the re-post of the
 * receive its request came in, which keeps the client's window exact: a
 * request is never dropped for want of a receive.  PUT payloads are RDMA
 * READ from the client's descriptors straight into the reserved entry's
 * pages, one part of the value at a time under the node's and the peer
 * address's receive caps as on TCP (ops->admit_recv); GET data is RDMA
 * WRITTEN from the pinned entry's pages, followed by the SEND of the
 * reply (RC ordering makes the data visible first).
 * Transfers go through the kernel's RDMA R/W API (rdma_rw_ctx_*, as
 * nvmet-rdma does): in rounds of at most RW_CTXS descriptor parts, one
 * context each, so the send queue is sized by the depth, whatever the
 * value size; the API maps the pages and registers MRs on a device that
 * needs them.  Small values, key lists and non-GET reply data ride
 * inline in the SENDs.
 *
 * A connect request takes a slot under the node's connection limit
 * (max_conns, counted per transport) before anything of the connection
 * is allocated; over it, the request is rejected BUSY.  The QP's ack
 * timeout is ours (RDMA_ACK_TIMEOUT), its RNR retries bounded.  The
 * node's deadlines hold as on TCP (dfkv_conn_deadline(), from a delayed
 * work per connection): the first request, idleness, a payload READ
 * whole within frame_ms of its start, and work requests posted that do
 * not complete for frame_ms, or move less than min_rate, kill the
 * connection, so a client that never completes its side of a transfer
 * (a QP that never answers: rxe retries forever at a retry count of 7)
 * holds neither entries nor RAM.
 *
 * Teardown happens on the workqueue, never in a CM callback: the release
 * work stops all posting, disconnects, drains the QP (every posted work
 * request has completed or was flushed, so no page is referenced by the
 * device any more), waits for the request works, and only then aborts
 * unfinished PUTs, unpins GET entries and drops leases.  An ib_client
 * tears down the connections of a device that goes away.
 */
#include <linux/error-injection.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <linux/uio.h>
#include <net/genetlink.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_cm.h>
#include <rdma/rdma_cm.h>
#include <rdma/rw.h>
#include <linux/scatterlist.h>

#include "compat.h"
#include "rdma.h"
#include "listener.h"
#include "node.h"
#include "req.h"
#include "wire.h"

#define RDMA_DEPTH_DEFAULT	32
/*
 * One transfer round: at most RW_CTXS pieces (a descriptor's part each,
 * an rdma_rw context), RW_SGES page segments in all.
 */
#define RW_CTXS			8
#define RW_SGES			128
#define RW_SGE_PER_WR		16
/*
 * Our QP's local ACK timeout, 4.096 us << 14 = 67 ms (IBA 9.7.6.1.3): a
 * peer that stops acknowledging fails a work request after the connect
 * request's retry count of those (at most 7, about half a second; rxe
 * takes 7 as forever, the frame deadline ends that).
 */
#define RDMA_ACK_TIMEOUT	14

static struct workqueue_struct *dfkv_rdma_wq;
/*
 * Connection teardown flushes the request works of dfkv_rdma_wq, so it
 * runs on a workqueue of its own: on dfkv_rdma_wq, a teardown run by the
 * rescuer (worker creation too slow: the pool asked for it) would wait
 * for request works the rescuer had taken into its own list behind it.
 */
static struct workqueue_struct *dfkv_rdma_release_wq;

/* A device in use: its protection domain, shared by its connections. */
struct rdma_dev {
	struct list_head list;		/* dev_list */
	struct kref ref;
	struct ib_device *ibdev;
	struct ib_pd *pd;
	struct list_head conns;		/* under dev_lock */
	atomic_t nr_conns;
	wait_queue_head_t conns_gone;
};

static LIST_HEAD(dev_list);
static DEFINE_MUTEX(dev_lock);		/* dev_list, devices' conns */

/* A node's RDMA side, node->transports[DFKV_LISTENER_RDMA]. */
struct rdma_node {
	struct dfkv_listeners ls;	/* first: the transport layer's */
	atomic64_t accepts;
	atomic64_t reads;		/* RDMA READ work requests posted */
	atomic64_t writes;		/* RDMA WRITE work requests posted */
	atomic64_t read_bytes;
	atomic64_t write_bytes;
	atomic64_t cq_errors;		/* failed work completions */
};

static struct rdma_node *rdma_node(struct dfkv_node *node)
{
	return container_of(node->transports[DFKV_LISTENER_RDMA],
			    struct rdma_node, ls);
}

struct rdma_listener {
	struct dfkv_listener base;
	struct rdma_cm_id *cm_id;	/* xchg: device removal may take it */
};

struct rdma_conn;

/* A posted receive and the request it got. */
struct rdma_recv {
	struct ib_cqe cqe;
	struct ib_recv_wr wr;
	struct ib_sge sge;
	struct rdma_conn *conn;
	struct list_head list;		/* conn->pending */
	u8 *buf;
	u64 dma;
	u32 len;			/* bytes received */
	u64 seq;			/* arrival order */
};

enum cmd_state {
	CMD_FREE,
	CMD_NEW,			/* a request to run */
	CMD_XFER,			/* a READ/WRITE round in flight */
	CMD_PARKED,			/* waiting: a PUT leader, a cold read */
	CMD_REPLY,			/* reply built, waiting for its turn */
	CMD_SENT,			/* reply posted */
};

/* One request being handled. */
struct rdma_cmd {
	struct rdma_conn *conn;
	struct list_head free;		/* conn->free_cmds */
	struct work_struct work;
	struct ib_cqe rw_last_cqe;	/* a round's last (signaled) one */
	struct ib_cqe send_cqe;
	enum cmd_state state;
	struct rdma_recv *recv;

	/* the request */
	struct dfkv_req req;
	u32 ndesc;
	const u8 *desc;			/* in recv->buf */
	u64 desc_total;
	/* a transfer: READ into req.put.e or buf, or WRITE from req.rd.e */
	struct list_head reading;	/* conn->reading, while READing */
	unsigned long read_since;	/* jiffies: its READ started */
	bool xfer_write;
	u64 xfer_total;
	u64 xfer_done;
	u64 round_bytes;
	u32 d_idx;
	u64 d_off;
	int xfer_err;
	bool xfer_buf;			/* READ into req.rx_buf */
	/* the round in flight: its rdma_rw contexts over their sg lists */
	u32 nctx;
	struct rdma_rw_ctx ctx[RW_CTXS];
	u32 ctx_sg[RW_CTXS];		/* a context's first entry of sgl */
	u32 ctx_nsg[RW_CTXS];
	struct scatterlist sgl[RW_SGES];
	struct bio_vec bv[RW_SGES];

	/* the reply */
	u8 *sbuf;			/* prefix + inline data */
	u64 sbuf_dma;
	bool tx_mapped;			/* req.rsp.data above inline_max */
	u64 tx_dma;
	u32 tx_len;
	struct ib_send_wr send_wr;
	struct ib_sge send_sge[2];
};

struct rdma_conn {
	struct dfkv_conn_core core;	/* in rdma_node.ls */
	struct list_head dev_list;	/* rdma_dev.conns */
	struct dfkv_node *node;
	struct rdma_dev *dev;
	struct rdma_cm_id *cm_id;
	struct ib_qp *qp;
	struct ib_cq *cq;
	u32 cq_size;
	struct dfkv_sess sess;		/* its grants and leases */

	u32 depth;
	u32 inline_max;
	u32 max_desc;
	u32 recv_len;
	u32 sbuf_len;
	u32 sge_rd;			/* SGEs per RDMA READ */
	u32 sge_wr;			/* SGEs per RDMA WRITE */

	spinlock_t lock;		/* everything below, and all posting */
	bool dead;			/* nothing is posted any more */
	u32 posted;			/* rounds and replies not completed */
	struct list_head reading;	/* cmds READing a payload, oldest first */
	struct list_head free_cmds;
	struct list_head pending;	/* receives waiting for a cmd */
	u64 recv_seq;
	u64 reply_seq;
	struct rdma_cmd **ready;	/* [seq % depth]: replies in waiting */

	struct rdma_recv *recvs;	/* depth */
	struct rdma_cmd **cmds;		/* nr_cmds */
	u32 nr_cmds;
};

static bool conn_kill(struct rdma_conn *conn)
{
	return dfkv_conn_kill(&conn->core);
}

static struct ib_device *conn_ibdev(struct rdma_conn *conn)
{
	return conn->dev->ibdev;
}

/* ------------------------------------------------------------ devices */

static void rdev_free(struct kref *ref)
{
	struct rdma_dev *dev = container_of(ref, struct rdma_dev, ref);

	lockdep_assert_held(&dev_lock);
	list_del(&dev->list);
	ib_dealloc_pd(dev->pd);
	kfree(dev);
}

static void rdev_put(struct rdma_dev *dev)
{
	mutex_lock(&dev_lock);
	kref_put(&dev->ref, rdev_free);
	mutex_unlock(&dev_lock);
}

static struct rdma_dev *rdev_get(struct ib_device *ibdev)
{
	struct rdma_dev *dev;

	mutex_lock(&dev_lock);
	list_for_each_entry(dev, &dev_list, list) {
		if (dev->ibdev == ibdev) {
			kref_get(&dev->ref);
			goto out;
		}
	}
	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev)
		goto out;
	dev->pd = ib_alloc_pd(ibdev, 0);
	if (IS_ERR(dev->pd)) {
		kfree(dev);
		dev = NULL;
		goto out;
	}
	dev->ibdev = ibdev;
	kref_init(&dev->ref);
	INIT_LIST_HEAD(&dev->conns);
	init_waitqueue_head(&dev->conns_gone);
	list_add(&dev->list, &dev_list);
out:
	mutex_unlock(&dev_lock);
	return dev;
}

/* ------------------------------------------------------------ posting */

static int post_recv_locked(struct rdma_conn *conn, struct rdma_recv *rv)
{
	ib_dma_sync_single_for_device(conn_ibdev(conn), rv->dma, conn->recv_len,
				      DMA_FROM_DEVICE);
	return ib_post_recv(conn->qp, &rv->wr, NULL);
}

/*
 * Post the replies that are next in request order, each after re-posting
 * the receive its request came in.  Called with conn->lock held.
 */
static void post_replies_locked(struct rdma_conn *conn)
{
	struct rdma_cmd *cmd;

	while ((cmd = conn->ready[conn->reply_seq % conn->depth])) {
		conn->ready[conn->reply_seq % conn->depth] = NULL;
		conn->reply_seq++;
		if (post_recv_locked(conn, cmd->recv) ||
		    ib_post_send(conn->qp, &cmd->send_wr, NULL)) {
			/* stays CMD_REPLY: the release work frees it */
			conn_kill(conn);
			continue;
		}
		conn->posted++;
		cmd->recv = NULL;
		cmd->state = CMD_SENT;
	}
}

/* The reply of cmd is built: send it when its turn comes. */
static void reply_queue(struct rdma_cmd *cmd)
{
	struct rdma_conn *conn = cmd->conn;

	cmd->state = CMD_REPLY;
	spin_lock(&conn->lock);
	if (!conn->dead) {
		conn->ready[cmd->recv->seq % conn->depth] = cmd;
		post_replies_locked(conn);
	}
	spin_unlock(&conn->lock);
}

/*
 * Build the reply of cmd->req: the prefix and up to inline_max bytes of
 * data in sbuf (inl of them already there: a GET's), larger data as a
 * second SGE.  GET data written by RDMA WRITE only has its length in the
 * prefix.
 */
static void reply(struct rdma_cmd *cmd, u32 inl)
{
	struct rdma_conn *conn = cmd->conn;
	struct ib_device *ibdev = conn_ibdev(conn);
	struct dfkv_req_rsp *rsp = &cmd->req.rsp;
	u64 data_len = rsp->data_len;

	/* other reply data than GET's is inline in the client's receives */
	if (rsp->data && data_len > DFKV_RDMA_REPLY_DATA_MAX)
		data_len = DFKV_RDMA_REPLY_DATA_MAX;
	if (rsp->data && data_len <= conn->inline_max) {
		memcpy(cmd->sbuf + DFKV_RESP_PREFIX_LEN, rsp->data, data_len);
		inl = data_len;
	} else if (rsp->data) {
		cmd->tx_dma = ib_dma_map_single(ibdev, rsp->data, data_len,
						DMA_TO_DEVICE);
		if (ib_dma_mapping_error(ibdev, cmd->tx_dma)) {
			rsp->status = DFKV_STATUS_BUSY;
			rsp->stored_len = 0;
			data_len = 0;
		} else {
			cmd->tx_len = data_len;
			cmd->tx_mapped = true;
		}
	}
	dfkv_wire_put_resp(cmd->sbuf, DFKV_EPOCH_RDMA, rsp->status,
			   rsp->stored_len, data_len);
	cmd->send_sge[0].addr = cmd->sbuf_dma;
	cmd->send_sge[0].length = DFKV_RESP_PREFIX_LEN + inl;
	cmd->send_sge[0].lkey = conn->dev->pd->local_dma_lkey;
	cmd->send_wr.num_sge = 1;
	if (cmd->tx_mapped) {
		cmd->send_sge[1].addr = cmd->tx_dma;
		cmd->send_sge[1].length = cmd->tx_len;
		cmd->send_sge[1].lkey = conn->dev->pd->local_dma_lkey;
		cmd->send_wr.num_sge = 2;
	}
	ib_dma_sync_single_for_device(ibdev, cmd->sbuf_dma, conn->sbuf_len,
				      DMA_TO_DEVICE);
	reply_queue(cmd);
}

/* ---------------------------------------------------------- transfers */

static enum dma_data_direction round_dir(struct rdma_cmd *cmd)
{
	return cmd->xfer_write ? DMA_TO_DEVICE : DMA_FROM_DEVICE;
}

/* The round's contexts are done with (completed, flushed, never posted). */
static void round_destroy(struct rdma_cmd *cmd)
{
	struct rdma_conn *conn = cmd->conn;
	u32 i;

	for (i = 0; i < cmd->nctx; i++)
		rdma_rw_ctx_destroy(&cmd->ctx[i], conn->qp, conn->cm_id->port_num,
				    &cmd->sgl[cmd->ctx_sg[i]], cmd->ctx_nsg[i],
				    round_dir(cmd));
	cmd->nctx = 0;
}

/*
 * The segments of the transfer's next want bytes from planned on, into
 * cmd->sgl from entry first, at most room of them: their number, and in
 * *covered the bytes they hold (0: nothing to map).
 */
static u32 round_map(struct rdma_cmd *cmd, u64 planned, u64 want, u32 first,
		     u32 room, size_t *covered)
{
	struct dfkv_req *req = &cmd->req;
	unsigned int nr, i;

	if (cmd->xfer_buf) {
		sg_set_buf(&cmd->sgl[first], req->rx_buf + planned, want);
		*covered = want;
		return 1;
	}
	nr = dfkv_req_map(req, planned, want, cmd->bv, room, covered);
	for (i = 0; i < nr; i++)
		sg_set_page(&cmd->sgl[first + i], cmd->bv[i].bv_page,
			    cmd->bv[i].bv_len, cmd->bv[i].bv_offset);
	return nr;
}

/*
 * Build and post the next round of the transfer: one rdma_rw context per
 * descriptor part (the kernel's RDMA R/W API maps the pages and, on a
 * device that needs them, registers MRs), chained, the last signaled.
 * 0 or -errno.
 */
static int round_post(struct rdma_cmd *cmd)
{
	struct rdma_conn *conn = cmd->conn;
	struct rdma_node *rn = rdma_node(conn->node);
	u32 port = conn->cm_id->port_num;
	u32 per_wr = cmd->xfer_write ? conn->sge_wr : conn->sge_rd;
	u64 planned = cmd->xfer_done, end = cmd->xfer_total;
	struct ib_send_wr *first_wr = NULL;
	u32 nwr = 0, nsg = 0;
	int err = 0, k;

	/* a PUT's value, only as far as its entry has RAM yet */
	if (!cmd->xfer_write && !cmd->xfer_buf)
		end = min(end, cmd->req.put.reserved);
	sg_init_table(cmd->sgl, RW_SGES);
	while (planned < end && cmd->nctx < RW_CTXS && nsg < RW_SGES) {
		const u8 *d = cmd->desc + (size_t)cmd->d_idx * DFKV_RDMA_DESC_LEN;
		u32 dlen = get_unaligned_le32(d + DFKV_RDMA_DESC_BYTES);
		u64 want = min_t(u64, dlen - cmd->d_off, end - planned);
		u32 n, c = cmd->nctx;
		size_t covered;

		n = round_map(cmd, planned, want, nsg,
			      min_t(u32, per_wr, RW_SGES - nsg), &covered);
		if (!covered) {
			err = -EIO;
			break;
		}
		err = rdma_rw_ctx_init(&cmd->ctx[c], conn->qp, port,
				       &cmd->sgl[nsg], n, 0,
				       get_unaligned_le64(d + DFKV_RDMA_DESC_ADDR) +
				       cmd->d_off,
				       get_unaligned_le32(d + DFKV_RDMA_DESC_RKEY),
				       round_dir(cmd));
		if (err < 0)
			break;
		nwr += err;
		err = 0;
		cmd->ctx_sg[c] = nsg;
		cmd->ctx_nsg[c] = n;
		cmd->nctx++;
		nsg += n;
		planned += covered;
		cmd->d_off += covered;
		if (cmd->d_off == dlen) {
			cmd->d_idx++;
			cmd->d_off = 0;
		}
	}
	if (!err && !cmd->nctx)
		err = -EIO;
	if (err) {
		round_destroy(cmd);
		return err;
	}
	/* chained back to front: the last context's last WR is signaled */
	for (k = cmd->nctx - 1; k >= 0; k--)
		first_wr = rdma_rw_ctx_wrs(&cmd->ctx[k], conn->qp, port,
					   &cmd->rw_last_cqe, first_wr);
	cmd->round_bytes = planned - cmd->xfer_done;
	cmd->state = CMD_XFER;

	spin_lock(&conn->lock);
	if (conn->dead)
		err = -ESHUTDOWN;
	else
		err = ib_post_send(conn->qp, first_wr, NULL);
	if (!err)
		conn->posted++;
	spin_unlock(&conn->lock);
	if (err) {
		/* nothing of the round went out (rxe, mlx: all or the head) */
		round_destroy(cmd);
		return err;
	}
	if (cmd->xfer_write) {
		atomic64_add(nwr, &rn->writes);
		atomic64_add(cmd->round_bytes, &rn->write_bytes);
	} else {
		atomic64_add(nwr, &rn->reads);
		atomic64_add(cmd->round_bytes, &rn->read_bytes);
	}
	return 0;
}

static void count_wc_error(struct rdma_conn *conn, struct ib_wc *wc)
{
	if (wc->status != IB_WC_WR_FLUSH_ERR) {
		atomic64_inc(&rdma_node(conn->node)->cq_errors);
		pr_debug("dfkv: rdma work completion %s\n",
			 ib_wc_status_msg(wc->status));
	}
}

/* The last work request of a round: the round is over either way. */
static void rw_last_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rdma_cmd *cmd = container_of(wc->wr_cqe, struct rdma_cmd,
					    rw_last_cqe);
	struct rdma_conn *conn = cmd->conn;

	round_destroy(cmd);
	spin_lock(&conn->lock);
	conn->posted--;
	if (wc->status == IB_WC_SUCCESS)
		dfkv_conn_clock_moved(&conn->core.clk, cmd->round_bytes);
	spin_unlock(&conn->lock);
	if (wc->status != IB_WC_SUCCESS) {
		count_wc_error(conn, wc);
		cmd->xfer_err = -EIO;
		conn_kill(conn);
	} else if (!cmd->xfer_err) {
		cmd->xfer_done += cmd->round_bytes;
	}
	queue_work(dfkv_rdma_wq, &cmd->work);
}

/*
 * A payload READ is under the frame deadline from its start to its end
 * (conn_phase_locked()); cmds join conn->reading in that order.
 */
static void reading_add(struct rdma_cmd *cmd)
{
	struct rdma_conn *conn = cmd->conn;

	spin_lock(&conn->lock);
	cmd->read_since = jiffies;
	list_add_tail(&cmd->reading, &conn->reading);
	spin_unlock(&conn->lock);
}

static void reading_del(struct rdma_cmd *cmd)
{
	struct rdma_conn *conn = cmd->conn;

	spin_lock(&conn->lock);
	list_del_init(&cmd->reading);
	spin_unlock(&conn->lock);
}

/* Start a transfer of the descriptors' total; false if none could start. */
static bool xfer_start(struct rdma_cmd *cmd, bool write, u64 len)
{
	cmd->xfer_write = write;
	cmd->xfer_total = len;
	cmd->xfer_done = 0;
	cmd->xfer_err = 0;
	cmd->d_idx = 0;
	cmd->d_off = 0;
	/* before the post: the round may complete at once */
	if (!write)
		reading_add(cmd);
	if (!round_post(cmd))
		return true;
	reading_del(cmd);
	return false;
}

/* ---------------------------------------------------------- execution */

/*
 * GET data of the pinned entry: RDMA WRITTEN to the client's descriptors
 * before the reply, or inline in it.
 */
static void send_get(struct rdma_cmd *cmd)
{
	struct dfkv_req *req = &cmd->req;
	u64 n = req->rsp.data_len;
	struct kvec kv = {
		.iov_base = cmd->sbuf + DFKV_RESP_PREFIX_LEN,
		.iov_len = n,
	};
	struct iov_iter it;

	if (n && cmd->ndesc) {
		if (!xfer_start(cmd, true, n)) {
			dfkv_req_sent(req, false);
			reply(cmd, 0);
		}
		return;
	}
	iov_iter_kvec(&it, ITER_DEST, &kv, 1, n);
	reply(cmd, dfkv_req_read(req, &it, DFKV_STATUS_IO_ERROR) ? n : 0);
}

/*
 * The executor decided the reply.  One that closes the connection (the
 * third failed AUTH) closes it from send_done(), once the peer has it.
 */
static void cmd_queue_response(struct dfkv_req *req)
{
	struct rdma_cmd *cmd = container_of(req, struct rdma_cmd, req);

	/* once the reply is posted, send_done() may reuse cmd */
	if (req->rd.e)
		send_get(cmd);
	else
		reply(cmd, 0);
}

/* A parked request may go on (under its entry's lock). */
static void cmd_unpark(struct dfkv_req *req)
{
	queue_work(dfkv_rdma_wq,
		   &container_of(req, struct rdma_cmd, req)->work);
}

static const struct dfkv_req_ops rdma_req_ops = {
	.queue_response = cmd_queue_response,
	.unpark = cmd_unpark,
	.admit_recv = true,
	.transport = DFKV_HIST_RDMA,
};

/*
 * A transfer round completed: go on, or finish the request.  A PUT's
 * READ that filled the RAM its entry has asks for the next part's
 * (dfkv_req_recv_more()); refused, the PUT is aborted and its reply
 * (BUSY, CACHE_FULL) decided.
 */
static void cmd_xfer_next(struct rdma_cmd *cmd)
{
	struct dfkv_req *req = &cmd->req;
	bool failed = cmd->xfer_err;

	if (!failed && cmd->xfer_done < cmd->xfer_total) {
		if (!cmd->xfer_write && !cmd->xfer_buf &&
		    cmd->xfer_done == req->put.reserved &&
		    !dfkv_req_recv_more(req)) {
			reading_del(cmd);
			dfkv_req_exec(req, 0);
			return;
		}
		if (!round_post(cmd))
			return;
		failed = true;
	}
	reading_del(cmd);
	cmd->xfer_buf = false;
	if (req->op == DFKV_OP_GET) {
		dfkv_req_sent(req, !failed);
		reply(cmd, 0);
	} else {
		/* a PUT's value or another op's payload is in, or not */
		if (!dfkv_req_exec(req, failed ? -EIO : 0))
			cmd->state = CMD_PARKED;	/* for the disk */
	}
}

/*
 * Check the descriptors of a request: none over the maximum, none empty,
 * their total what the op needs.  Returns a status.
 */
static int check_desc(struct rdma_cmd *cmd, u32 len)
{
	struct rdma_conn *conn = cmd->conn;
	const u8 *buf = cmd->recv->buf;
	u64 payload_len = cmd->req.payload_len;
	u32 i;

	cmd->ndesc = get_unaligned_le32(buf + DFKV_REQ_PREFIX_LEN);
	cmd->desc = buf + DFKV_RDMA_REQ_HDR_LEN;
	cmd->desc_total = 0;
	if (!cmd->ndesc) {
		/* the payload, if any, is inline */
		if (payload_len > conn->inline_max ||
		    len != DFKV_RDMA_REQ_HDR_LEN + payload_len)
			return DFKV_STATUS_INVALID;
		return DFKV_STATUS_OK;
	}
	if (cmd->ndesc > conn->max_desc ||
	    len != DFKV_RDMA_REQ_HDR_LEN + cmd->ndesc * DFKV_RDMA_DESC_LEN)
		return DFKV_STATUS_INVALID;
	for (i = 0; i < cmd->ndesc; i++) {
		u32 dl = get_unaligned_le32(cmd->desc +
					    i * DFKV_RDMA_DESC_LEN +
					    DFKV_RDMA_DESC_BYTES);

		if (!dl)
			return DFKV_STATUS_INVALID;
		cmd->desc_total += dl;
	}
	if (cmd->req.op == DFKV_OP_GET)
		return DFKV_STATUS_OK;
	/* descriptors are the payload's sources: they must add up */
	if (!payload_len || cmd->desc_total != payload_len)
		return DFKV_STATUS_INVALID;
	return DFKV_STATUS_OK;
}

/* Take an inline PUT value into the leader's entry. */
static int put_copy_inline(struct dfkv_req *req)
{
	struct kvec kv = {
		.iov_base = (void *)req->payload,
		.iov_len = req->payload_len,
	};
	struct iov_iter it;

	iov_iter_kvec(&it, ITER_SOURCE, &kv, 1, req->payload_len);
	return dfkv_req_copy_in(req, &it) ? 0 : -EIO;
}

/* RDMA READ a payload into the request's buffer. */
static void read_payload(struct rdma_cmd *cmd)
{
	struct dfkv_req *req = &cmd->req;

	cmd->xfer_buf = true;
	if (!xfer_start(cmd, false, req->payload_len)) {
		cmd->xfer_buf = false;
		dfkv_req_exec(req, -EIO);
	}
}

/* A request came in: decode it, take its payload, run it. */
static void cmd_start(struct rdma_cmd *cmd)
{
	struct rdma_conn *conn = cmd->conn;
	struct dfkv_req *req = &cmd->req;
	struct rdma_recv *rv = cmd->recv;
	struct dfkv_wire_req wr;
	int status;

	if (rv->len < DFKV_RDMA_REQ_HDR_LEN ||
	    dfkv_wire_parse_req(rv->buf, DFKV_EPOCH_RDMA,
				READ_ONCE(conn->node->max_value), &wr)) {
		dfkv_req_fail(req, DFKV_STATUS_INVALID);
		return;
	}
	req->op = wr.op;
	req->key = wr.key;
	req->offset = wr.offset;
	req->length = wr.length;
	req->payload_len = wr.payload_len;
	status = check_desc(cmd, rv->len);
	if (status != DFKV_STATUS_OK) {
		dfkv_req_fail(req, status);
		return;
	}
	req->cap = cmd->ndesc ? cmd->desc_total : conn->inline_max;
	if (!cmd->ndesc && req->payload_len)
		req->payload = rv->buf + DFKV_RDMA_REQ_HDR_LEN;
	if (!dfkv_req_begin(req)) {
		dfkv_req_exec(req, 0);
		return;
	}
	switch (req->rx) {
	case DFKV_REQ_RX_PUT:
		if (!cmd->ndesc) {
			if (!dfkv_req_exec(req, put_copy_inline(req)))
				cmd->state = CMD_PARKED;	/* for the disk */
		} else if (!xfer_start(cmd, false, req->payload_len)) {
			dfkv_req_exec(req, -EIO);
		}
		break;
	case DFKV_REQ_RX_BUF:
		read_payload(cmd);
		break;
	default:
		/* a follower, a cold GET parks: no worker waits for it */
		if (!dfkv_req_exec(req, 0))
			cmd->state = CMD_PARKED;
		break;
	}
}

static void cmd_work(struct work_struct *work)
{
	struct rdma_cmd *cmd = container_of(work, struct rdma_cmd, work);

	if (cmd->state == CMD_NEW)
		cmd_start(cmd);
	else if (cmd->state == CMD_XFER)
		cmd_xfer_next(cmd);
	else if (cmd->state == CMD_PARKED && !READ_ONCE(cmd->conn->dead))
		dfkv_req_resume(&cmd->req);	/* a dead one is cmd_cleanup()'s */
}

/* Give a receive to a cmd.  Called with conn->lock held. */
static void cmd_attach_locked(struct rdma_cmd *cmd, struct rdma_recv *rv)
{
	list_del(&cmd->free);
	cmd->recv = rv;
	cmd->state = CMD_NEW;
	queue_work(dfkv_rdma_wq, &cmd->work);
}

static void recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rdma_recv *rv = container_of(wc->wr_cqe, struct rdma_recv, cqe);
	struct rdma_conn *conn = rv->conn;
	bool first;

	if (wc->status != IB_WC_SUCCESS) {
		if (wc->status != IB_WC_WR_FLUSH_ERR) {
			count_wc_error(conn, wc);
			conn_kill(conn);
		}
		return;
	}
	rv->len = wc->byte_len;
	ib_dma_sync_single_for_cpu(conn_ibdev(conn), rv->dma, conn->recv_len,
				   DMA_FROM_DEVICE);
	spin_lock(&conn->lock);
	rv->seq = conn->recv_seq++;
	first = !rv->seq;
	WRITE_ONCE(conn->core.clk.got_request, true);
	dfkv_conn_clock_moved(&conn->core.clk, rv->len);
	if (!conn->dead && !list_empty(&conn->free_cmds))
		cmd_attach_locked(list_first_entry(&conn->free_cmds,
						   struct rdma_cmd, free), rv);
	else
		list_add_tail(&rv->list, &conn->pending);
	spin_unlock(&conn->lock);
	/*
	 * A request on the QP means the connection is up, whether or not
	 * the CM has had the client's RTU (late or lost): tell it, so that
	 * our close is a disconnect (DREQ), not the reject of a connection
	 * the CM still thinks is being set up.
	 */
	if (first)
		rdma_notify(conn->cm_id, IB_EVENT_COMM_EST);
}

/* The reply went out: the request is over, its cmd serves the next. */
static void send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rdma_cmd *cmd = container_of(wc->wr_cqe, struct rdma_cmd,
					    send_cqe);
	struct rdma_conn *conn = cmd->conn;
	bool close = cmd->req.rsp.close;
	u32 sent = cmd->send_sge[0].length + (cmd->tx_mapped ? cmd->tx_len : 0);
	struct rdma_recv *rv;

	if (wc->status != IB_WC_SUCCESS) {
		count_wc_error(conn, wc);
		close = true;
	}
	/* An RC send completes once the peer acknowledged the reply. */
	if (close)
		conn_kill(conn);
	if (cmd->tx_mapped) {
		ib_dma_unmap_single(conn_ibdev(conn), cmd->tx_dma, cmd->tx_len,
				    DMA_TO_DEVICE);
		cmd->tx_mapped = false;
	}
	dfkv_req_done(&cmd->req);
	cmd->state = CMD_FREE;
	spin_lock(&conn->lock);
	conn->posted--;
	if (wc->status == IB_WC_SUCCESS)
		dfkv_conn_clock_moved(&conn->core.clk, sent);
	list_add(&cmd->free, &conn->free_cmds);
	rv = list_first_entry_or_null(&conn->pending, struct rdma_recv, list);
	if (rv && !conn->dead) {
		list_del(&rv->list);
		cmd_attach_locked(cmd, rv);
	}
	spin_unlock(&conn->lock);
}

/* After the QP drained: release what a request still holds. */
static void cmd_cleanup(struct rdma_cmd *cmd)
{
	struct ib_device *ibdev = conn_ibdev(cmd->conn);

	round_destroy(cmd);
	reading_del(cmd);
	cmd->xfer_buf = false;
	if (cmd->tx_mapped)
		ib_dma_unmap_single(ibdev, cmd->tx_dma, cmd->tx_len,
				    DMA_TO_DEVICE);
	cmd->tx_mapped = false;
	dfkv_req_done(&cmd->req);
	/* A parked request's wakeup racing us queued its work. */
	flush_work(&cmd->work);
	cmd->state = CMD_FREE;
}

/* ---------------------------------------------------------- connections */

static void conn_free_bufs(struct rdma_conn *conn)
{
	struct ib_device *ibdev = conn_ibdev(conn);
	u32 i;

	for (i = 0; conn->recvs && i < conn->depth; i++) {
		struct rdma_recv *rv = &conn->recvs[i];

		if (!rv->buf)
			continue;
		if (rv->dma)
			ib_dma_unmap_single(ibdev, rv->dma, conn->recv_len,
					    DMA_FROM_DEVICE);
		kfree(rv->buf);
	}
	kfree(conn->recvs);
	for (i = 0; conn->cmds && i < conn->nr_cmds; i++) {
		struct rdma_cmd *cmd = conn->cmds[i];

		if (!cmd)
			continue;
		if (cmd->sbuf_dma)
			ib_dma_unmap_single(ibdev, cmd->sbuf_dma,
					    conn->sbuf_len, DMA_TO_DEVICE);
		kfree(cmd->sbuf);
		kfree(cmd);
	}
	kfree(conn->cmds);
	kfree(conn->ready);
}

static noinline int conn_alloc_bufs(struct rdma_conn *conn)
{
	struct ib_device *ibdev = conn_ibdev(conn);
	u32 i;

	conn->recvs = kcalloc(conn->depth, sizeof(*conn->recvs), GFP_KERNEL);
	conn->cmds = kcalloc(conn->nr_cmds, sizeof(*conn->cmds), GFP_KERNEL);
	conn->ready = kcalloc(conn->depth, sizeof(*conn->ready), GFP_KERNEL);
	if (!conn->recvs || !conn->cmds || !conn->ready)
		return -ENOMEM;
	for (i = 0; i < conn->depth; i++) {
		struct rdma_recv *rv = &conn->recvs[i];

		rv->conn = conn;
		rv->buf = kmalloc(conn->recv_len, GFP_KERNEL);
		if (!rv->buf)
			return -ENOMEM;
		rv->dma = ib_dma_map_single(ibdev, rv->buf, conn->recv_len,
					    DMA_FROM_DEVICE);
		if (ib_dma_mapping_error(ibdev, rv->dma)) {
			rv->dma = 0;
			return -ENOMEM;
		}
		rv->cqe.done = recv_done;
		rv->sge.addr = rv->dma;
		rv->sge.length = conn->recv_len;
		rv->sge.lkey = conn->dev->pd->local_dma_lkey;
		rv->wr.wr_cqe = &rv->cqe;
		rv->wr.sg_list = &rv->sge;
		rv->wr.num_sge = 1;
	}
	for (i = 0; i < conn->nr_cmds; i++) {
		struct rdma_cmd *cmd = kzalloc(sizeof(*cmd), GFP_KERNEL);

		if (!cmd)
			return -ENOMEM;
		conn->cmds[i] = cmd;
		cmd->conn = conn;
		INIT_WORK(&cmd->work, cmd_work);
		INIT_LIST_HEAD(&cmd->reading);
		dfkv_req_init(&cmd->req, &conn->sess, &rdma_req_ops);
		cmd->rw_last_cqe.done = rw_last_done;
		cmd->send_cqe.done = send_done;
		cmd->send_wr.opcode = IB_WR_SEND;
		cmd->send_wr.send_flags = IB_SEND_SIGNALED;
		cmd->send_wr.wr_cqe = &cmd->send_cqe;
		cmd->send_wr.sg_list = cmd->send_sge;
		cmd->sbuf = kzalloc(conn->sbuf_len, GFP_KERNEL);
		if (!cmd->sbuf)
			return -ENOMEM;
		cmd->sbuf_dma = ib_dma_map_single(ibdev, cmd->sbuf,
						  conn->sbuf_len, DMA_TO_DEVICE);
		if (ib_dma_mapping_error(ibdev, cmd->sbuf_dma)) {
			cmd->sbuf_dma = 0;
			return -ENOMEM;
		}
		list_add_tail(&cmd->free, &conn->free_cmds);
	}
	return 0;
}

ALLOW_ERROR_INJECTION(conn_alloc_bufs, ERRNO);

/* Tear down the QP side of a connection (its QP drained or never used). */
static void conn_destroy_ib(struct rdma_conn *conn)
{
	if (conn->qp)
		ib_destroy_qp(conn->qp);
	if (conn->cq)
		ib_cq_pool_put(conn->cq, conn->cq_size);
	conn_free_bufs(conn);
}

/*
 * What the connection is doing, for its deadlines: READing a payload
 * (the oldest READ started is the frame whose deadline runs), else
 * waiting for rounds or replies it posted, else nothing (between
 * requests, a follower parked, a request being run).  The send queue
 * completes in order, so a stalled work request stalls every later one.
 */
static enum dfkv_conn_phase conn_phase(struct dfkv_conn_core *cc)
{
	struct rdma_conn *conn = container_of(cc, struct rdma_conn, core);
	enum dfkv_conn_phase phase;
	struct rdma_cmd *oldest;

	spin_lock(&conn->lock);
	oldest = list_first_entry_or_null(&conn->reading, struct rdma_cmd,
					  reading);
	if (oldest) {
		WRITE_ONCE(cc->clk.frame_start, oldest->read_since);
		phase = DFKV_CONN_RX;
	} else {
		phase = conn->posted ? DFKV_CONN_TX : DFKV_CONN_WAIT;
	}
	spin_unlock(&conn->lock);
	return phase;
}

static void conn_release_work(struct work_struct *work)
{
	struct rdma_conn *conn = container_of(work, struct rdma_conn,
					      core.release_work);
	struct dfkv_node *node = conn->node;
	u32 i;

	spin_lock(&conn->lock);
	conn->dead = true;
	spin_unlock(&conn->lock);
	rdma_disconnect(conn->cm_id);
	/* every posted work request completes or is flushed */
	ib_drain_qp(conn->qp);
	for (i = 0; i < conn->nr_cmds; i++)
		flush_work(&conn->cmds[i]->work);
	for (i = 0; i < conn->nr_cmds; i++)
		if (conn->cmds[i]->state != CMD_FREE)
			cmd_cleanup(conn->cmds[i]);
	rdma_destroy_id(conn->cm_id);
	/*
	 * Destroying the id waited for conn_create(), which starts the
	 * deadline work: cancelled now, it is never queued again.
	 */
	dfkv_conn_deadline_stop(&conn->core);
	conn_destroy_ib(conn);

	mutex_lock(&dev_lock);
	list_del(&conn->dev_list);
	if (atomic_dec_and_test(&conn->dev->nr_conns))
		wake_up(&conn->dev->conns_gone);
	kref_put(&conn->dev->ref, rdev_free);
	mutex_unlock(&dev_lock);

	dfkv_sess_destroy(&conn->sess);
	dfkv_listeners_conn_del(&rdma_node(node)->ls, &conn->core);
	kfree(conn);
	dfkv_node_put(node);
}

static int conn_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct rdma_conn *conn = id->context;

	switch (ev->event) {
	case RDMA_CM_EVENT_ESTABLISHED:
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
	case RDMA_CM_EVENT_ADDR_CHANGE:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		/* the ib_client tears down connections of a removed device */
		conn_kill(conn);
		break;
	default:
		break;
	}
	return 0;
}

static void hello_put(u8 *h, u8 status, u32 depth, u32 inl, u32 ndesc,
		      u64 max_value)
{
	memset(h, 0, DFKV_RDMA_HELLO_LEN);
	h[DFKV_RDMA_HELLO_EPOCH] = DFKV_EPOCH_RDMA;
	h[DFKV_RDMA_HELLO_STATUS] = status;
	put_unaligned_le16(depth, h + DFKV_RDMA_HELLO_DEPTH);
	put_unaligned_le32(inl, h + DFKV_RDMA_HELLO_INLINE_MAX);
	put_unaligned_le32(ndesc, h + DFKV_RDMA_HELLO_DESC_MAX);
	put_unaligned_le64(max_value, h + DFKV_RDMA_HELLO_MAX_VALUE);
}

static int conn_reject(struct rdma_cm_id *id, struct dfkv_node *node,
		       u8 status)
{
	u8 h[DFKV_RDMA_HELLO_LEN];

	hello_put(h, status, DFKV_RDMA_DEPTH_MAX, DFKV_RDMA_INLINE_MAX,
		  DFKV_RDMA_DESC_MAX, READ_ONCE(node->max_value));
	rdma_reject(id, h, sizeof(h), IB_CM_REJ_CONSUMER_DEFINED);
	return -ECONNREFUSED;	/* the CM destroys the id */
}

/* The client's HELLO: epoch 7, a queue depth and descriptors. */
static bool hello_valid(const u8 *h)
{
	return h[DFKV_RDMA_HELLO_EPOCH] == DFKV_EPOCH_RDMA &&
		get_unaligned_le16(h + DFKV_RDMA_HELLO_DEPTH) &&
		get_unaligned_le32(h + DFKV_RDMA_HELLO_DESC_MAX);
}

/* Size the connection from the client's valid HELLO and the device. */
static void conn_negotiate(struct rdma_conn *conn, struct ib_device *ibdev,
			   const u8 *h)
{
	const struct ib_device_attr *at = &ibdev->attrs;
	u32 depth = get_unaligned_le16(h + DFKV_RDMA_HELLO_DEPTH);
	u32 inl = get_unaligned_le32(h + DFKV_RDMA_HELLO_INLINE_MAX);
	u32 ndesc = get_unaligned_le32(h + DFKV_RDMA_HELLO_DESC_MAX);
	u32 sq;

	depth = min_t(u32, depth, DFKV_RDMA_DEPTH_MAX);
	/* the send queue holds a round of each request and each reply */
	while (depth > 1 &&
	       (depth * (RW_CTXS + 2) + 1 > (u32)at->max_qp_wr ||
		depth * (RW_CTXS + 3) + 2 > (u32)at->max_cqe))
		depth /= 2;
	conn->depth = depth;
	conn->nr_cmds = 2 * depth;
	conn->inline_max = min_t(u32, inl, DFKV_RDMA_INLINE_MAX);
	conn->max_desc = min_t(u32, ndesc, DFKV_RDMA_DESC_MAX);
	conn->recv_len = DFKV_RDMA_REQ_HDR_LEN + max_t(u32, conn->inline_max,
					     conn->max_desc * DFKV_RDMA_DESC_LEN);
	conn->sbuf_len = DFKV_RESP_PREFIX_LEN + conn->inline_max;
	conn->sge_wr = min_t(u32, RW_SGE_PER_WR, at->max_send_sge);
	conn->sge_rd = min_t(u32, conn->sge_wr, at->max_sge_rd);
	if (!conn->sge_rd)
		conn->sge_rd = 1;
	sq = depth * RW_CTXS + conn->nr_cmds;
	conn->cq_size = depth + sq + 2;
}

/* The connection's CQ, QP and buffers, receives posted; 0 or -errno. */
static int conn_create_qp(struct rdma_conn *conn, struct rdma_cm_id *id)
{
	struct ib_qp_init_attr qa = {};
	u32 i;
	int err;

	conn->cq = ib_cq_pool_get(id->device, conn->cq_size, -1,
				  IB_POLL_WORKQUEUE);
	if (IS_ERR(conn->cq)) {
		err = PTR_ERR(conn->cq);
		conn->cq = NULL;
		return err;
	}
	qa.qp_context = conn;
	qa.send_cq = conn->cq;
	qa.recv_cq = conn->cq;
	qa.sq_sig_type = IB_SIGNAL_REQ_WR;
	qa.qp_type = IB_QPT_RC;
	qa.port_num = id->port_num;
	/* the sends; the core adds what the rdma_rw contexts need */
	qa.cap.max_send_wr = conn->nr_cmds + 1;
	qa.cap.max_rdma_ctxs = conn->depth * RW_CTXS;
	qa.cap.max_recv_wr = conn->depth + 1;
	qa.cap.max_send_sge = max_t(u32, conn->sge_wr, 2);
	qa.cap.max_recv_sge = 1;
	err = rdma_create_qp(id, conn->dev->pd, &qa);
	if (err)
		return err;
	conn->qp = id->qp;
	/*
	 * Our QP's ack timeout, whatever the client's connect request says
	 * (0 there would be no timer at all); its transport retries are the
	 * request's retry count (IB: at most 7).
	 */
	err = rdma_set_ack_timeout(id, RDMA_ACK_TIMEOUT);
	if (err)
		return err;
	err = conn_alloc_bufs(conn);
	if (err)
		return err;
	for (i = 0; i < conn->depth; i++) {
		err = post_recv_locked(conn, &conn->recvs[i]);
		if (err)
			return err;
	}
	return 0;
}

/* Accept the connect request with our side of the hello. */
static void conn_accept(struct rdma_conn *conn, struct rdma_cm_id *id,
			const struct rdma_conn_param *cp)
{
	struct rdma_conn_param ap = {};
	u8 h[DFKV_RDMA_HELLO_LEN];

	hello_put(h, DFKV_STATUS_OK, conn->depth, conn->inline_max,
		  conn->max_desc, READ_ONCE(conn->node->max_value));
	ap.private_data = h;
	ap.private_data_len = sizeof(h);
	/*
	 * The connect request's values are our side's already (the CM
	 * swaps the client's): our READs in flight never exceed what the
	 * client offers (0: they never start, and the deadline ends it).
	 */
	ap.responder_resources = min_t(u32, cp->responder_resources,
				       id->device->attrs.max_qp_rd_atom);
	ap.initiator_depth = min_t(u32, cp->initiator_depth,
				   id->device->attrs.max_qp_init_rd_atom);
	ap.rnr_retry_count = 6;		/* for the client's QP */
	ap.flow_control = 1;
	dfkv_conn_clock_init(&conn->core.clk, jiffies);
	dfkv_conn_deadline_start(&conn->core, dfkv_rdma_wq, &conn->node->limits,
				 DFKV_LISTENER_RDMA, conn_phase);
	if (rdma_accept(id, &ap))
		conn_kill(conn);
}

/* A connect request the node refuses before allocating anything, or 0. */
static int conn_request_status(struct rdma_cm_id *id,
			       const struct rdma_conn_param *cp)
{
	if (!cp->private_data || cp->private_data_len < DFKV_RDMA_HELLO_LEN ||
	    !hello_valid(cp->private_data))
		return DFKV_STATUS_INVALID;
	if (rdma_protocol_iwarp(id->device, id->port_num))
		return DFKV_STATUS_UNSUPPORTED;
	/*
	 * Our QP retries RNR as often as the client's REQ says: never more
	 * than 6 times (of the CM's 655 ms timer), so a client that stops
	 * posting receives loses its connection instead of holding replies
	 * forever.  libdfkv keeps its receives posted.
	 */
	if (cp->rnr_retry_count > 6)
		return DFKV_STATUS_INVALID;
	return DFKV_STATUS_OK;
}

static int conn_create(struct rdma_listener *l, struct rdma_cm_id *id,
		       struct rdma_cm_event *ev)
{
	struct dfkv_node *node = l->base.node;
	struct rdma_node *rn = rdma_node(node);
	const struct rdma_conn_param *cp = &ev->param.conn;
	struct rdma_conn *conn;
	struct rdma_dev *dev;
	u32 i;
	int err;

	err = conn_request_status(id, cp);
	if (err != DFKV_STATUS_OK)
		return conn_reject(id, node, err);
	/* over the limit, nothing is allocated */
	err = dfkv_listeners_conn_reserve(&rn->ls,
					  READ_ONCE(node->limits.max_conns));
	if (err) {
		if (err == -EBUSY)
			atomic64_inc(&node->limits.refused);
		return conn_reject(id, node, DFKV_STATUS_BUSY);
	}
	conn = kzalloc(sizeof(*conn), GFP_KERNEL);
	if (!conn)
		goto err_unreserve;
	dfkv_sess_init(&conn->sess, node, false);
	conn_negotiate(conn, id->device, cp->private_data);
	dev = rdev_get(id->device);
	if (!dev)
		goto err_kfree;
	conn->dev = dev;
	conn->node = node;
	conn->cm_id = id;
	spin_lock_init(&conn->lock);
	INIT_LIST_HEAD(&conn->free_cmds);
	INIT_LIST_HEAD(&conn->pending);
	INIT_LIST_HEAD(&conn->reading);
	dfkv_conn_core_init(&conn->core, dfkv_rdma_release_wq,
			    conn_release_work);
	if (conn_create_qp(conn, id))
		goto err_free;
	/*
	 * From here on the release work owns the connection, its slot and
	 * the id.
	 */
	if (dfkv_listeners_conn_add_reserved(&rn->ls, &conn->core, node,
					     &id->route.addr.dst_addr))
		goto err_free;
	for (i = 0; i < conn->nr_cmds; i++)
		conn->cmds[i]->req.peer = conn->core.peer;
	atomic64_inc(&rn->accepts);
	mutex_lock(&dev_lock);
	list_add_tail(&conn->dev_list, &dev->conns);
	atomic_inc(&dev->nr_conns);
	mutex_unlock(&dev_lock);
	id->context = conn;
	id->event_handler = conn_cm_handler;
	conn_accept(conn, id, cp);
	return 0;

err_free:
	if (conn->qp) {
		ib_drain_qp(conn->qp);
		rdma_destroy_qp(id);	/* the CM destroys the id itself */
		conn->qp = NULL;
	}
	conn_destroy_ib(conn);
	rdev_put(dev);
err_kfree:
	dfkv_sess_destroy(&conn->sess);
	kfree(conn);
err_unreserve:
	dfkv_listeners_conn_unreserve(&rn->ls);
	return conn_reject(id, node, DFKV_STATUS_BUSY);
}

/* ---------------------------------------------------------- listeners */

static int listener_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct rdma_listener *l = id->context;

	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		return conn_create(l, id, ev);
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		/*
		 * A listener bound to the device: the CM destroys the id
		 * when we return 1; make sure nobody else does.
		 */
		return xchg(&l->cm_id, NULL) == id ? 1 : 0;
	default:
		return 0;
	}
}

static void listener_free(struct dfkv_listener *base)
{
	struct rdma_listener *l = container_of(base, struct rdma_listener,
					       base);
	struct rdma_cm_id *id = xchg(&l->cm_id, NULL);

	if (id)
		rdma_destroy_id(id);	/* waits for its handlers */
	kfree(l);
}

static int rdma_listener_add(struct dfkv_node *node, const char *addr,
			     u16 port, struct netlink_ext_ack *extack)
{
	struct rdma_node *rn = rdma_node(node);
	struct rdma_listener *l;
	struct rdma_cm_id *id;
	int err;

	l = kzalloc(sizeof(*l), GFP_KERNEL);
	if (!l)
		return -ENOMEM;
	err = dfkv_listener_init(&rn->ls, &l->base, node, addr, port, extack);
	if (err)
		goto err_free;
	id = rdma_create_id(node->net, listener_cm_handler, l, RDMA_PS_TCP,
			    IB_QPT_RC);
	if (IS_ERR(id)) {
		err = PTR_ERR(id);
		NL_SET_ERR_MSG(extack, "cannot create an RDMA CM id (is rdma_cm loaded?)");
		goto err_free;
	}
	l->cm_id = id;
	rdma_set_reuseaddr(id, 1);
	err = rdma_bind_addr(id, (struct sockaddr *)&l->base.addr);
	if (err) {
		NL_SET_ERR_MSG(extack, "cannot bind: no RDMA device has this address, or in use");
		goto err_id;
	}
	err = rdma_listen(id, 128);
	if (err) {
		NL_SET_ERR_MSG(extack, "cannot listen on this RDMA address");
		goto err_id;
	}
	err = dfkv_listeners_add(&rn->ls, &l->base, extack);
	if (err)
		goto err_id;
	return 0;

err_id:
	listener_free(&l->base);
	return err;
err_free:
	kfree(l);
	return err;
}

static int rdma_fill_stats(struct sk_buff *skb, struct dfkv_node *node)
{
	struct rdma_node *rn = rdma_node(node);

	if (nla_put_u64_64bit(skb, DFKV_STAT_RDMA_CONNS,
			      READ_ONCE(rn->ls.nr_conns), DFKV_STAT_PAD) ||
	    nla_put_u64_64bit(skb, DFKV_STAT_RDMA_ACCEPTS,
			      atomic64_read(&rn->accepts), DFKV_STAT_PAD) ||
	    nla_put_u64_64bit(skb, DFKV_STAT_RDMA_READS,
			      atomic64_read(&rn->reads), DFKV_STAT_PAD) ||
	    nla_put_u64_64bit(skb, DFKV_STAT_RDMA_WRITES,
			      atomic64_read(&rn->writes), DFKV_STAT_PAD) ||
	    nla_put_u64_64bit(skb, DFKV_STAT_RDMA_READ_BYTES,
			      atomic64_read(&rn->read_bytes), DFKV_STAT_PAD) ||
	    nla_put_u64_64bit(skb, DFKV_STAT_RDMA_WRITE_BYTES,
			      atomic64_read(&rn->write_bytes), DFKV_STAT_PAD) ||
	    nla_put_u64_64bit(skb, DFKV_STAT_RDMA_CQ_ERRORS,
			      atomic64_read(&rn->cq_errors), DFKV_STAT_PAD))
		return -EMSGSIZE;
	return 0;
}

static const struct dfkv_transport_ops rdma_transport_ops = {
	.kind = DFKV_LISTENER_RDMA,
	.default_port = DFKV_PORT_RDMA,
	.node_size = sizeof(struct rdma_node),
	.listener_free = listener_free,
	.listener_add = rdma_listener_add,
	.fill_stats = rdma_fill_stats,
};

/* ------------------------------------------------------------ ib_client */

static int dfkv_rdma_add_one(struct ib_device *ibdev)
{
	return 0;
}

/* A device goes away: close its connections and wait for them. */
static void dfkv_rdma_remove_one(struct ib_device *ibdev, void *client_data)
{
	struct rdma_dev *dev, *found = NULL;
	struct rdma_conn *conn;

	mutex_lock(&dev_lock);
	list_for_each_entry(dev, &dev_list, list) {
		if (dev->ibdev == ibdev) {
			found = dev;
			kref_get(&dev->ref);
			list_for_each_entry(conn, &dev->conns, dev_list)
				conn_kill(conn);
			break;
		}
	}
	mutex_unlock(&dev_lock);
	if (!found)
		return;
	wait_event(found->conns_gone, !atomic_read(&found->nr_conns));
	rdev_put(found);
}

static struct ib_client dfkv_ib_client = {
	.name = "dfkv",
	.add = dfkv_rdma_add_one,
	.remove = dfkv_rdma_remove_one,
};

int __init dfkv_rdma_init(void)
{
	int err;

	dfkv_rdma_wq = alloc_workqueue("dfkv_rdma", WQ_MEM_RECLAIM | WQ_UNBOUND,
				       0);
	if (!dfkv_rdma_wq)
		return -ENOMEM;
	dfkv_rdma_release_wq = alloc_workqueue("dfkv_rdma_release",
					       WQ_MEM_RECLAIM | WQ_UNBOUND, 0);
	if (!dfkv_rdma_release_wq) {
		err = -ENOMEM;
		goto err_wq;
	}
	err = ib_register_client(&dfkv_ib_client);
	if (err)
		goto err_release_wq;
	err = dfkv_transport_register(&rdma_transport_ops);
	if (err)
		goto err_client;
	return 0;

err_client:
	ib_unregister_client(&dfkv_ib_client);
err_release_wq:
	destroy_workqueue(dfkv_rdma_release_wq);
err_wq:
	destroy_workqueue(dfkv_rdma_wq);
	return err;
}

void dfkv_rdma_exit(void)
{
	dfkv_transport_unregister(&rdma_transport_ops);
	ib_unregister_client(&dfkv_ib_client);
	destroy_workqueue(dfkv_rdma_release_wq);
	destroy_workqueue(dfkv_rdma_wq);
}
