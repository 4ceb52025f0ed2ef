"""What every engine connector shares.

Identity (SPEC 1.1/1.2) is derived by each connector from its engine's
runtime metadata; this module only turns those fields into namespace
bytes.  Control settings (members, mdsd, transport, RDMA, the tenant
secret) choose how to reach the cluster and never enter the namespace.
"""

import os

import dfkv

# Settings a connector accepts that only say how to reach the cluster.
CONTROL_KEYS = ("members", "mds_endpoints", "group", "client_id",
                "mds_token_file", "transport", "rdma_devices", "rdma_port",
                "rdma_expose", "local_dev", "tenant_secret_file",
                "conns_per_peer", "batch_concurrency", "connect_timeout_ms",
                "io_timeout_ms")


class ConfigError(ValueError):
    """A connector's settings are missing or malformed."""


def control_settings(cfg):
    """The dfkv.Client keyword arguments among cfg (a mapping).

    Unknown keys are left to the connector; `tenant` is required
    separately by every connector (see namespace()).  A cluster is named
    by `members` or by `mds_endpoints` + `group`.
    """
    out = {k: cfg[k] for k in CONTROL_KEYS if cfg.get(k) not in (None, "")}
    if "members" not in out and "mds_endpoints" not in out:
        raise ConfigError("dfkv: set 'members' (name=host:port,...) or "
                          "'mds_endpoints' and 'group'")
    if "mds_endpoints" in out and "group" not in out:
        raise ConfigError("dfkv: 'mds_endpoints' needs 'group'")
    if "tenant_secret_file" in out:
        out["tenant_secret"] = os.fspath(out.pop("tenant_secret_file"))
    for k in ("rdma_port", "conns_per_peer", "batch_concurrency",
              "connect_timeout_ms", "io_timeout_ms"):
        if k in out:
            out[k] = int(out[k])
    return out


def tenant_of(cfg):
    """The mandatory tenant id of cfg: a clear error when missing."""
    t = cfg.get("tenant")
    if not t:
        raise ConfigError("dfkv: 'tenant' is required (the tenant id the "
                          "node's operator registered for this model)")
    return str(t)


def namespace(tenant, model_id, model_revision, layout_id, dtype,
              layout_fields, block_tokens, num_layers, group, tp=1, pp=1,
              dp=1, pcp=1, dcp=1):
    """Namespace bytes (SPEC 1.1) from an engine's identity fields.

    layout_fields: the shape/stride values that fix the byte layout of a
    block (ints or strings, in a fixed order per layout_id); they are
    hashed into the layout fingerprint.
    """
    fp = dfkv.layout_fingerprint([str(f).encode() for f in layout_fields])
    return dfkv.ns_build(tenant.encode(), model_id.encode(),
                         (model_revision or "").encode(), layout_id.encode(),
                         str(dtype).encode(), fp, block_tokens, num_layers,
                         str(group).encode(), tp=tp, pp=pp, dp=dp, pcp=pcp,
                         dcp=dcp)


def open_client(cfg, ns):
    """A dfkv.Client for cfg's control settings and namespace ns."""
    kw = control_settings(cfg)
    return dfkv.Client(kw.pop("members", None), ns, **kw)


def register_pool(client, buf):
    """Register an engine's host pool (a writable buffer) with client for
    zero-copy RDMA; a client without RDMA (TCP, /dev/dfkv) uses the
    buffers as they are and has nothing to register."""
    try:
        client.register_memory(buf)
    except dfkv.DfkvError as e:
        if e.status != dfkv.ERRORS["E_NODEV"]:
            raise
