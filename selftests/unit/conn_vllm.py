# SPDX-License-Identifier: GPL-2.0
"""Identity of the vLLM connector (dfkv.connectors.vllm), natively and
without a node: run by `make unit` with venv-vllm's python.

The configuration objects are vLLM's own (OffloadingConfig, and the
TieringOffloadingSpec its factory builds from the docs'
--kv-transfer-config); the namespace and keys are the connector's.
"""

import dataclasses
import os
import sys

from enginetest import private_hub

_tmp = private_hub("dfkv-unit-vllm-")

import numpy as np  # noqa: E402

import dfkv  # noqa: E402
from enginetest import HubCache, check_pin, distinct, doc_json  # noqa: E402
from unittap import run, test  # noqa: E402
from vllm.v1.kv_offload.config import (OffloadingCacheConfig,  # noqa: E402
                                       OffloadingConfig,
                                       OffloadingGroupConfig,
                                       OffloadingModelConfig,
                                       OffloadingParallelConfig)
from vllm.v1.kv_offload.factory import OffloadingSpecFactory  # noqa: E402
from vllm.v1.kv_offload.tiering.factory import \
    SecondaryTierFactory  # noqa: E402

from dfkv.connectors import common  # noqa: E402
from dfkv.connectors import vllm as dv  # noqa: E402

# The layout ids and the digest of their field lists.  A change to
# LAYOUT_FIELDS needs a new LAYOUT_ID (and its pin here): objects of the
# old layout must not be read as the new one.
PINNED = {
    "vllm-multiwr-v4":
        "591cce627fecac7061d8b204132ec0804658ba52b20a80161470dae49ce07230",
}
MODEL = "acme/tiny"
HUB = HubCache(os.environ["HF_HUB_CACHE"], MODEL)
HUB.set_main("c3" * 20)
HubCache(os.environ["HF_HUB_CACHE"], "acme/other").set_main("e5" * 20)
TIER = doc_json("vllm-kv-transfer-config")[
    "kv_connector_extra_config"]["secondary_tiers"][0]


def config(**over):
    """An OffloadingConfig; over replaces fields (dotted for nested
    ones: "parallel.tp_size")."""
    base = dict(
        groups=(OffloadingGroupConfig(tokens_per_block=16,
                                      layer_names=("l0", "l1"),
                                      group_id=0),),
        worker_kv_bytes_per_block=16384, enable_kv_cache_events=False,
        extra_config={"spec_name": "TieringOffloadingSpec",
                      "cpu_bytes_to_use": 1 << 24,
                      "secondary_tiers": [dict(TIER)]},
        engine_id="unit",
        model=OffloadingModelConfig(name=MODEL, dtype="bfloat16"),
        cache=OffloadingCacheConfig(tokens_per_hash=16, blocks_per_chunk=1),
        parallel=OffloadingParallelConfig(
            rank=0, world_size=2, tp_size=2, pp_size=1, pcp_size=1,
            dcp_size=1, data_parallel_index=0, data_parallel_size=1,
            data_parallel_rank_local=None, is_parallelism_agnostic=False),
        replicated_layout=False, kv_cache_layout="NHD")
    nested = {}
    for k, v in over.items():
        if "." in k:
            a, b = k.split(".")
            nested.setdefault(a, {})[b] = v
        else:
            base[k] = v
    for a, fields in nested.items():
        if a == "group":
            base["groups"] = (dataclasses.replace(base["groups"][0],
                                                  **fields),)
        else:
            base[a] = dataclasses.replace(base[a], **fields)
    return OffloadingConfig(**base)


def layout(revision=None, **over):
    spec = OffloadingSpecFactory.create_spec(config(**over))
    rev = common.resolve_revision(spec.config.model.name, revision)
    return dv.Layout(spec, spec.config.groups[0], rev)


def ns(**over):
    return layout(**over).namespace("acme")


@test("the layout id and its field list are pinned")
def t_pin():
    check_pin(dv.LAYOUT_ID, dv.LAYOUT_FIELDS, PINNED)
    assert set(layout().values) == set(dv.LAYOUT_FIELDS)


# One change of vLLM's configuration per layout-bearing field (and the
# namespace's own fields): each must give another namespace.
CHANGES = {
    "tokens_per_hash": {"cache": OffloadingCacheConfig(8, 2)},
    "blocks_per_chunk": {"cache": OffloadingCacheConfig(16, 2)},
    "tokens_per_block": {"group.tokens_per_block": 32},
    "worker_kv_bytes_per_block": {"worker_kv_bytes_per_block": 32768},
    "world_size": {"parallel.world_size": 4, "parallel.pp_size": 2},
    "replicated_layout": {"replicated_layout": True},
    "canonical_layout": {"canonical_layout": True},
    "kv_cache_layout": {"kv_cache_layout": "HND"},
    "group_id": {"group.group_id": 1},
    "layers_sha256": {"group.layer_names": ("l0", "l2")},
    "sliding_window_chunks": {"group.sliding_window_size_in_chunks": 4},
    "model": {"model": OffloadingModelConfig(name="acme/other",
                                             dtype="bfloat16")},
    "dtype": {"model": OffloadingModelConfig(name=MODEL, dtype="float16")},
    "tp": {"parallel.tp_size": 4, "parallel.world_size": 4},
    "dcp": {"parallel.dcp_size": 2},
    "dp": {"parallel.data_parallel_size": 2},
}


@test("every layout-bearing field of vLLM's config changes the namespace")
def t_fields():
    distinct(ns(), {what: ns(**over) for what, over in CHANGES.items()})
    # Every fingerprint field is covered by a change above (slice_bytes
    # and copies move with worker_kv_bytes_per_block / replicated_layout).
    covered = set(CHANGES) | {"slice_bytes", "copies"}
    assert set(dv.LAYOUT_FIELDS) <= covered, set(dv.LAYOUT_FIELDS) - covered


@test("engine settings that are no identity leave the namespace alone")
def t_control():
    base = ns()
    assert ns(engine_id="other") == base
    assert ns(**{"parallel.rank": 1}) == base
    assert ns(**{"parallel.data_parallel_index": 1}) == base
    assert ns(extra_config={"spec_name": "TieringOffloadingSpec",
                            "cpu_bytes_to_use": 1 << 25,
                            "secondary_tiers": [dict(TIER, members="x=h:1",
                                                     transport="tcp")]}) \
        == base
    assert dfkv.tenant_identity(base) == b"acme"
    assert layout().namespace("other") != base


def refused(**over):
    """The ConfigError that resolving the revision raises."""
    try:
        layout(**over)
    except common.ConfigError as e:
        return str(e)
    raise AssertionError("no ConfigError for %s" % over)


@test("the revision: given, a snapshot's, a weights digest; never guessed")
def t_revision():
    a = ns()
    assert layout().revision == "c3" * 20
    # Two cached revisions (two engines of the model on one host, say):
    # the tier cannot tell which one vLLM serves, and says how to.
    HUB.set_main("d4" * 20)
    try:
        assert "model_revision" in refused()
        assert layout("d4" * 20).revision == "d4" * 20
        assert layout("d4" * 20).namespace("acme") != a
        assert layout("c3" * 20).namespace("acme") == a
    finally:
        HUB.drop("d4" * 20)
        HUB.set_main("c3" * 20)
    snap = os.path.join(HUB.dir, "snapshots", "c3" * 20)
    lay = layout(model=OffloadingModelConfig(name=snap, dtype="bfloat16"))
    assert (lay.model_id, lay.revision) == (MODEL, "c3" * 20)
    assert lay.namespace("acme") == a
    # A directory of weights that is no snapshot: a digest of its index,
    # which moves with the weights' headers; one without weights refuses.
    plain = os.path.join(_tmp, "plain-model")
    os.makedirs(plain)
    assert "no weights index" in refused(
        model=OffloadingModelConfig(name=plain, dtype="bfloat16"))

    def weights(header):
        with open(os.path.join(plain, "model.safetensors"), "wb") as f:
            f.write(len(header).to_bytes(8, "little") + header)
        return layout(model=OffloadingModelConfig(name=plain,
                                                  dtype="bfloat16"))
    d1 = weights(b'{"w":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}}')
    d2 = weights(b'{"w":{"dtype":"BF16","shape":[4],"data_offsets":[0,8]}}')
    assert d1.revision.startswith("sha256:") and d1.revision != d2.revision
    assert d1.model_id == plain
    assert "nor in the Hugging Face cache" in refused(
        model=OffloadingModelConfig(name="acme/absent", dtype="bfloat16"))


@test("TP shards are distinct keys; the replicated MLA copy is rank -1")
def t_ranks():
    h = bytes(range(32))
    ks = [dfkv.key_parse(k) for k in layout().keys(h)]
    assert [k["tp"] for k in ks] == [(2, 0), (2, 1)]
    assert all(k["dp"] == (1, -1) and k["hash"] == h for k in ks)
    assert len(set(layout().keys(h))) == 2
    rep = layout(replicated_layout=True).keys(h)
    assert len(rep) == 1 and dfkv.key_parse(rep[0])["tp"] == (2, -1)
    pp = layout(**{"parallel.world_size": 4, "parallel.pp_size": 2}).keys(h)
    got = [(k["tp"][1], k["pp"][1]) for k in map(dfkv.key_parse, pp)]
    assert got == [(0, 0), (1, 0), (0, 1), (1, 1)], got
    dcp = layout(**{"parallel.dcp_size": 2}).keys(h)
    assert [dfkv.key_parse(k)["dcp"] for k in dcp] == [(2, 0), (2, 1)]


@test("the tier refuses a missing tenant, unknown settings, a bad locality")
def t_settings():
    spec = OffloadingSpecFactory.create_spec(config())
    view = memoryview(np.zeros((4, 65536), np.uint8))
    tier = SecondaryTierFactory.create_secondary_tier(
        dict(TIER, locality="REMOTE"), view, spec)
    assert tier.locality.value == "REMOTE", tier.locality
    tier.shutdown()
    for cfg, what in ((dict(TIER, tenant=""), "'tenant' is required"),
                      (dict(TIER, tenat="x"), "unknown setting tenat"),
                      (dict(TIER, locality="FAR"), "locality 'FAR'")):
        try:
            SecondaryTierFactory.create_secondary_tier(cfg, view, spec)
        except common.ConfigError as e:
            assert what in str(e), e
        else:
            raise AssertionError("accepted %s" % cfg)


sys.exit(run())
