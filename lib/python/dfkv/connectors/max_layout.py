"""Identity of MAX paged KV blocks in dfkv (SPEC 1.1, 1.2).

Owns the layout id `max-paged/raw-v1`, the fields of a MAX KV cache leaf
that fix the bytes of one stored block, the per-leaf namespace built from
them, and the object key of a block hash on a TP shard.  Imports no MAX,
so the identity is testable without the engine (selftests/unit).

A stored block is one page row, `bytes_per_page` bytes, of one TP shard's
`[num_pages, bytes_per_page]` uint8 view (KVCacheMemory.buffers[shard]).
A replicated unit (MLA: every shard holds the same bytes) is stored once
under TP rank -1; a sharded unit once per shard.  Any change to what these
fields describe or to that byte rule is a new layout id (bump -vN).
"""

from dfkv.connectors import common
import dfkv

LAYOUT_ID = "max-paged/raw-v1"
POOL = "kv"
COMPONENT = "kv"
# The layout-bearing fields, in fingerprint order (layout_fields()).
LAYOUT_FIELDS = ("group", "window_size", "dtype_bytes", "head_dim",
                 "n_kv_heads_per_device", "num_layers", "page_size",
                 "bytes_per_page", "replicated", "shards", "quant")


def leaf_fields(group_type, window_size, params, bytes_per_page, replicated,
                shards):
    """The layout fields (a dict keyed by LAYOUT_FIELDS) of one leaf:
    its KVCacheGroupId's type and window, the cache parameters (any
    object with MAX's KVCacheParams attributes) and its memory unit."""
    quant = "none"
    qc = getattr(params, "kvcache_quant_config", None)
    if getattr(params, "quantized_kv_cache", False) and qc is not None:
        quant = (f"{getattr(qc.scale_dtype, 'name', qc.scale_dtype)}:"
                 f"{qc.quantization_granularity}")
    return {
        "group": group_type,
        "window_size": int(window_size),
        "dtype_bytes": int(params.dtype.size_in_bytes),
        "head_dim": int(params.head_dim),
        "n_kv_heads_per_device": int(params.n_kv_heads_per_device),
        "num_layers": int(params.num_layers),
        "page_size": int(params.page_size),
        "bytes_per_page": int(bytes_per_page),
        "replicated": int(bool(replicated)),
        "shards": int(shards),
        "quant": quant,
    }


def layout_fields(fields):
    """The fingerprint inputs of fields, in LAYOUT_FIELDS order."""
    return [f"{k}={fields[k]}" for k in LAYOUT_FIELDS]


def namespace(tenant, model_id, model_revision, dtype, leaf_id, fields,
              tp_size):
    """Namespace bytes of one leaf (attention group) of a MAX model.
    Every DP replica of the tenant shares it (dp 1)."""
    return common.namespace(tenant, model_id, model_revision, LAYOUT_ID,
                            dtype, layout_fields(fields),
                            fields["page_size"], fields["num_layers"],
                            leaf_id, tp=tp_size)


def shard_ranks(replicated, shards):
    """The TP (size, rank) of each stored copy of a block: one replicated
    copy (-1) for identical shards, else one per shard."""
    if replicated:
        return [(shards, -1)]
    return [(shards, s) for s in range(shards)]


def object_key(block_hash, tp):
    """The canonical object key (SPEC 1.2) of a block hash (MAX's
    canonical 8- or 32-byte form, kept whole) on TP (size, rank)."""
    if len(block_hash) not in (8, 32):
        raise ValueError(f"dfkv: MAX block hash must be 8 or 32 bytes, "
                         f"got {len(block_hash)}")
    return dfkv.key_render(POOL, bytes(block_hash), (1, -1), tp, (1, 0),
                           (1, 0), (1, 0), 0, COMPONENT)
