# SPDX-License-Identifier: GPL-2.0
"""Identity of the LMCache connector (dfkv.connectors.lmcache), natively
and without a node: run by `make unit` with venv-lmcache's python.

The configuration is LMCache's own (LMCacheEngineConfig from the docs'
configuration, LMCacheMetadata, CacheEngineKey); the namespace and keys
are the connector's.
"""

import os
import sys

from enginetest import private_hub

_tmp = private_hub("dfkv-unit-lmcache-")

import torch  # noqa: E402

import dfkv  # noqa: E402
from enginetest import HubCache, check_pin, distinct, doc_block  # noqa: E402
from unittap import run, test  # noqa: E402
from lmcache.utils import CacheEngineKey  # noqa: E402
from lmcache.v1.config import LMCacheEngineConfig  # noqa: E402
from lmcache.v1.metadata import LMCacheMetadata  # noqa: E402
from lmcache.v1.storage_backend.connector import \
    ConnectorContext  # noqa: E402

from dfkv.connectors import common  # noqa: E402
from dfkv.connectors import lmcache as dl  # noqa: E402

# The layout ids and the digest of their field lists (see conn_vllm.py).
PINNED = {
    "lmcache/raw-v1":
        "ccf97b4e56b7602ef9f78641ce8bbb11dc7278dec02b14c023596960d308753d",
}
MODEL = "acme/tiny"
HUB = HubCache(os.environ["HF_HUB_CACHE"], MODEL)
HUB.set_main("a7" * 20)
HubCache(os.environ["HF_HUB_CACHE"], "acme/other").set_main("e5" * 20)
PATH = os.path.join(_tmp, "lmcache.yaml")
with open(PATH, "w") as f:
    f.write(doc_block("lmcache-config"))
CONFIG = LMCacheEngineConfig.from_file(PATH)


def metadata(**over):
    kw = dict(model_name=MODEL, world_size=2, local_world_size=2,
              worker_id=0, local_worker_id=0, kv_dtype=torch.bfloat16,
              kv_shape=(4, 2, 256, 8, 128), use_mla=False, role="worker",
              chunk_size=256)
    kw.update(over)
    return LMCacheMetadata(**kw)


def ident(config=CONFIG, **over):
    return dl.Identity(config, metadata(**over))


def ns(config=CONFIG, **over):
    return ident(config, **over).namespace("acme")


def key(md_over=None, h=0x1234abcd, worker=0, **kw):
    return CacheEngineKey(MODEL, 2, worker, h, torch.bfloat16, **kw)


@test("the layout id and its field list are pinned")
def t_pin():
    check_pin(dl.LAYOUT_ID, dl.LAYOUT_FIELDS, PINNED)
    assert set(ident().values) == set(dl.LAYOUT_FIELDS)


def config_with(**kv):
    c = LMCacheEngineConfig.from_file(PATH)
    for k, v in kv.items():
        setattr(c, k, v)
    return c


CHANGES = {
    "shapes": dict(kv_shape=(4, 2, 256, 8, 64)),
    "dtypes": dict(kv_dtype=torch.float16),
    "fmt": dict(use_mla=True, kv_shape=(4, 1, 256, 1, 576)),
    "chunk_size": dict(chunk_size=128),
    "kv_shape": dict(kv_shape=(4, 2, 256, 4, 256)),
    "layers": dict(kv_shape=(8, 2, 256, 8, 128)),
    "model": dict(model_name="acme/other"),
    "world": dict(world_size=4, local_world_size=4),
}


@test("every layout-bearing field of LMCache's metadata changes the "
      "namespace")
def t_fields():
    variants = {what: ns(**over) for what, over in CHANGES.items()}
    variants["serde"] = ns(config_with(remote_serde="cachegen"))
    variants["layerwise"] = ns(config_with(use_layerwise=True))
    distinct(ns(), variants)
    covered = set(CHANGES) | {"serde", "layerwise", "use_mla"}
    assert set(dl.LAYOUT_FIELDS) <= covered, set(dl.LAYOUT_FIELDS) - covered


@test("control settings and the worker leave the namespace alone")
def t_control():
    base = ns()
    assert ns(worker_id=1, local_worker_id=1) == base
    other = config_with(extra_config=dict(
        CONFIG.extra_config, **{
            "remote_storage_plugin.dfkv.members": "x=h:1",
            "remote_storage_plugin.dfkv.transport": "tcp"}))
    assert ns(other) == base
    assert dfkv.tenant_identity(base) == b"acme"
    s = dl.settings_of(CONFIG, "dfkv")
    assert s["tenant"] == "acme" and s["members"].startswith("n1=")


@test("the revision: the hub snapshot's, or given when several are cached")
def t_revision():
    a = ns()
    assert ident().revision == "a7" * 20
    HUB.set_main("b8" * 20)
    try:
        try:
            ident()
            raise AssertionError("two cached revisions were guessed")
        except common.ConfigError as e:
            assert "model_revision" in str(e), e
        assert dl.Identity(CONFIG, metadata(), "b8" * 20).namespace(
            "acme") != a
    finally:
        HUB.drop("b8" * 20)
        HUB.set_main("a7" * 20)


@test("keys: chunk hash and worker; MLA workers share tp rank -1; tags")
def t_keys():
    i = ident()
    k0, k1 = i.key(key(worker=0)), i.key(key(worker=1))
    assert k0 != k1
    p = dfkv.key_parse(k0)
    assert p["tp"] == (2, 0) and dfkv.key_parse(k1)["tp"] == (2, 1)
    assert p["hash"] == bytes.fromhex("1234abcd")
    assert i.key(key(h=-5)) != i.key(key(h=5))
    assert i.key(key(h=b"\x01" * 32)) != k0
    mla = ident(use_mla=True, kv_shape=(4, 1, 256, 1, 576))
    m0, m1 = mla.key(key(worker=0)), mla.key(key(worker=1))
    assert m0 == m1 and dfkv.key_parse(m0)["tp"] == (2, -1)
    tagged = i.key(key(request_configs={"lmcache.tag.user": "u1"}))
    assert tagged != k0
    assert i.key(key(request_configs={"lmcache.tag.user": "u2"})) != tagged


@test("the plugin refuses a missing tenant and unknown settings")
def t_settings():
    adapter = dl.DfkvConnectorAdapter()
    assert adapter.can_parse("plugin://dfkv")
    assert adapter.can_parse("plugin://dfkv.second")
    assert not adapter.can_parse("plugin://fs")
    for extra, what in (
            ({"remote_storage_plugin.dfkv.tenant": ""},
             "'tenant' is required"),
            ({"remote_storage_plugin.dfkv.tenat": "x"}, "unknown settings")):
        cfg = config_with(extra_config=dict(CONFIG.extra_config, **extra))
        ctx = ConnectorContext("plugin://dfkv", None, None, cfg, metadata(),
                               plugin_name="dfkv")
        try:
            adapter.create_connector(ctx)
        except common.ConfigError as e:
            assert what in str(e), e
        else:
            raise AssertionError("accepted %s" % extra)


sys.exit(run())
