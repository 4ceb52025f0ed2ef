# SPDX-License-Identifier: GPL-2.0
"""demo-lmcache.py: make demo's connector step, run on the host by
tools/demo-connector with venv-lmcache's python.  LMCache builds its
storage backends from the configuration of Documentation/connectors.md
(remote_storage_plugins loads dfkv.connectors.lmcache), pointed at the
demo's node in the test VM ($DFKV_MEMBERS).  16 chunks of a small model's
KV cache go out through LMCache's batched put, batched_contains finds
them (one PROBE), unknown chunks miss, and a batched get brings them back
byte-exact."""

import asyncio
import os
import sys
import tempfile
import threading

import numpy as np
import torch
from lmcache.utils import CacheEngineKey
from lmcache.v1.config import LMCacheEngineConfig
from lmcache.v1.metadata import LMCacheMetadata
from lmcache.v1.storage_backend import CreateStorageBackends

MODEL = "acme/tiny-llama"
CHUNK = 256
# (layers, K/V, chunk tokens, kv heads, head size): 512 KiB per fp16 chunk.
KV_SHAPE = (4, 2, CHUNK, 2, 64)
N = 16
CONFIG = """chunk_size: %d
local_cpu: true
max_local_cpu_size: 0.25
remote_serde: naive
remote_storage_plugins: ["dfkv"]
extra_config:
  remote_storage_plugin.dfkv.module_path: dfkv.connectors.lmcache
  remote_storage_plugin.dfkv.class_name: DfkvConnectorAdapter
  remote_storage_plugin.dfkv.tenant: acme
  remote_storage_plugin.dfkv.model_revision: rev-a
  remote_storage_plugin.dfkv.quantization: none
  remote_storage_plugin.dfkv.lora: none
  remote_storage_plugin.dfkv.members: %s
"""


def backends():
    text = CONFIG % (CHUNK, os.environ["DFKV_MEMBERS"])
    print("LMCache configuration:\n" + text, flush=True)
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
        f.write(text)
        f.flush()
        cfg = LMCacheEngineConfig.from_file(f.name)
    md = LMCacheMetadata(model_name=MODEL, world_size=1, local_world_size=1,
                         worker_id=0, local_worker_id=0,
                         kv_dtype=torch.float16, kv_shape=KV_SHAPE,
                         use_mla=False, role="worker", chunk_size=CHUNK)
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()
    b = CreateStorageBackends(cfg, md, loop, dst_device="cpu")
    return b["RemoteBackend-dfkv"], b["LocalCPUBackend"], md, loop


def main():
    remote, cpu, md, loop = backends()
    keys = [CacheEngineKey(MODEL, 1, 0, 0xd00 + i, torch.float16)
            for i in range(N)]
    rng = np.random.default_rng(7)
    objs, want = [], []
    for _ in keys:
        o = cpu.allocate(md.get_shapes(), md.get_dtypes())
        view = np.frombuffer(o.byte_array, np.uint8)
        view[:] = rng.integers(0, 256, view.size, dtype=np.uint8)
        want.append(bytes(view))
        objs.append(o)
    done = threading.Semaphore(0)
    remote.batched_submit_put_task(keys, objs,
                                   on_complete_callback=lambda k: done.release())
    for o in objs:
        o.ref_count_down()
    for _ in keys:
        if not done.acquire(timeout=60):
            sys.exit("demo-lmcache: the puts did not complete")
    print("stored %d chunks of %d KiB through LMCache's batched put" %
          (N, len(want[0]) >> 10))
    hits = remote.batched_contains(keys)
    other = [CacheEngineKey(MODEL, 1, 0, 0xe00 + i, torch.float16)
             for i in range(4)]
    print("batched_contains: %d leading hits of %d; %d of 4 unknown chunks" %
          (hits, N, remote.batched_contains(other)))
    got = remote.batched_get_blocking(keys)
    same = sum(1 for o, w in zip(got, want)
               if o is not None and bytes(o.byte_array) == w)
    for o in got:
        if o is not None:
            o.ref_count_down()
    print("batched get: %d of %d chunks loaded back byte-exact" % (same, N))
    remote.close()
    loop.call_soon_threadsafe(loop.stop)
    return 0 if hits == N and same == N else 1


if __name__ == "__main__":
    sys.exit(main())
