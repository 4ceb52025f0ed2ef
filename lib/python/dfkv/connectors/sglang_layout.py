"""Identity of SGLang HiCache pages in dfkv (SPEC 1.1, 1.2).

Owns the layout id `sglang-hicache/raw-v1`, the fields of an SGLang host
pool that fix the bytes of one stored page, the namespace built from
them, and the object key of a page hash on a rank.  Imports no SGLang,
so the identity is testable without the engine (selftests/unit).

A stored page is the concatenation, in order, of the regions the host
pool's get_page_buffer_meta() names for it: K then V for MHA pools, the
one latent region for MLA pools, each `layer_num * page_size` tokens of
the page in the pool's layout.  Any change to what these fields describe
or to that concatenation is a new layout id (bump the -vN suffix).
"""

from dfkv.connectors import common
import dfkv

LAYOUT_ID = "sglang-hicache/raw-v1"
POOL = "kv"
COMPONENT = "kv"
GROUP = "full"
# Host pool layouts whose pages are contiguous runs (the zero-copy path).
PAGE_LAYOUTS = ("page_first", "page_first_direct")
# The layout-bearing fields, in fingerprint order (layout_fields()).
LAYOUT_FIELDS = ("kind", "layout", "page_size", "layer_num", "head_num",
                 "head_dim", "v_head_dim", "kv_lora_rank",
                 "qk_rope_head_dim", "itemsize", "regions")


def pool_fields(pool, regions):
    """The layout fields (a dict keyed by LAYOUT_FIELDS) of an SGLang
    host pool object and the byte sizes of one page's regions."""
    mla = hasattr(pool, "kv_lora_rank")
    return {
        "kind": "mla" if mla else "mha",
        "layout": pool.layout,
        "page_size": int(pool.page_size),
        "layer_num": int(pool.layer_num),
        "head_num": int(getattr(pool, "head_num", 1) or 1),
        "head_dim": int(getattr(pool, "head_dim", 0) or 0),
        "v_head_dim": int(getattr(pool, "v_head_dim", 0) or 0),
        "kv_lora_rank": int(getattr(pool, "kv_lora_rank", 0) or 0),
        "qk_rope_head_dim": int(getattr(pool, "qk_rope_head_dim", 0) or 0),
        "itemsize": int(pool.dtype.itemsize),
        "regions": ",".join(str(int(r)) for r in regions),
    }


def layout_fields(fields):
    """The fingerprint inputs of fields, in LAYOUT_FIELDS order."""
    return [f"{k}={fields[k]}" for k in LAYOUT_FIELDS]


def namespace(tenant, model_id, model_revision, dtype, fields, *, tp_size=1,
              pp_size=1, cp_size=1, dcp_size=1):
    """Namespace bytes of an SGLang deployment's KV pages.

    dtype: the pool's dtype name (e.g. "bfloat16").  DP replicas share
    pages (dp 1): with DP attention their attention-TP shards hold the
    same KV.
    """
    if not model_id:
        raise common.ConfigError("dfkv: SGLang gave the storage backend no "
                                 "model name")
    return common.namespace(tenant, model_id, model_revision, LAYOUT_ID,
                            dtype, layout_fields(fields),
                            fields["page_size"], fields["layer_num"], GROUP,
                            tp=tp_size, pp=pp_size, dp=1, pcp=cp_size,
                            dcp=dcp_size)


def rank_fields(is_mla, tp_size, tp_rank, pp_size, pp_rank, cp_size,
                cp_rank, dcp_size, dcp_rank):
    """The (size, rank) pairs of a page key for one rank: MLA ranks hold
    the same latent KV across TP (replicated, -1) but distinct DCP
    shards; MHA ranks hold distinct head shards."""
    return {
        "dp": (1, -1),
        "tp": (tp_size, -1 if is_mla else tp_rank),
        "pcp": (cp_size, cp_rank),
        "dcp": (dcp_size, dcp_rank),
        "pp": (pp_size, pp_rank),
    }


def hash_bytes(key):
    """The content hash of an SGLang page key: its hex digest decoded,
    any other string as its UTF-8 bytes."""
    try:
        if len(key) % 2 == 0:
            return bytes.fromhex(key)
    except ValueError:
        pass
    return key.encode()


def object_key(page_key, ranks):
    """The canonical object key (SPEC 1.2) of a page on a rank."""
    return dfkv.key_render(POOL, hash_bytes(page_key), ranks["dp"],
                           ranks["tp"], ranks["pcp"], ranks["dcp"],
                           ranks["pp"], 0, COMPONENT)
