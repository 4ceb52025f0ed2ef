// SPDX-License-Identifier: GPL-2.0
/*
 * dfkv.ko module init and exit: the entry cache, per-netns node state, the
 * generic netlink family and /dev/dfkv, set up in that order and torn down
 * in reverse.  Unloading deletes every node of every namespace after
 * waiting for the operations in flight.
 */
#include <linux/module.h>
#include <net/genetlink.h>

#include "chardev.h"
#include "netlink.h"
#include "node.h"
#include "store.h"
#include "tcp.h"
#include "rdma.h"

static int __init dfkv_init(void)
{
	int err;

	err = dfkv_store_cache_init();
	if (err)
		return err;
	err = dfkv_tcp_init();
	if (err)
		goto err_cache;
	err = dfkv_rdma_init();
	if (err)
		goto err_tcp;
	err = dfkv_node_pernet_init();
	if (err)
		goto err_rdma;
	err = dfkv_nl_init();
	if (err)
		goto err_pernet;
	err = dfkv_chardev_init();
	if (err)
		goto err_nl;
	pr_info("dfkv %s loaded (ABI %d)\n", DFKV_VERSION, DFKV_ABI_VERSION);
	return 0;

err_nl:
	dfkv_nl_exit();
err_pernet:
	dfkv_node_pernet_exit();
err_rdma:
	dfkv_rdma_exit();
err_tcp:
	dfkv_tcp_exit();
err_cache:
	dfkv_store_cache_exit();
	return err;
}

static void __exit dfkv_exit(void)
{
	dfkv_chardev_exit();
	dfkv_nl_exit();
	dfkv_node_pernet_exit();
	dfkv_rdma_exit();
	dfkv_tcp_exit();
	rcu_barrier();
	dfkv_store_cache_exit();
	pr_info("dfkv unloaded\n");
}

module_init(dfkv_init);
module_exit(dfkv_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("dfkv developers");
MODULE_DESCRIPTION("dfkv: distributed cache for LLM attention KV blocks");
MODULE_VERSION(DFKV_VERSION);
MODULE_ALIAS_GENL_FAMILY(DFKV_GENL_NAME);
