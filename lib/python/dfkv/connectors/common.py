"""What every engine connector shares.

Identity (SPEC 1.1/1.2) is derived by each connector from its engine's
runtime metadata; this module only turns those fields into namespace
bytes.  Control settings (members, mdsd, transport, RDMA, the tenant
secret) choose how to reach the cluster and never enter the namespace.
Also here: the layout-field digest the identity tests pin, key rendering
from an engine's ranks, and the tracker of asynchronous batches that a
non-blocking connector polls.
"""

import hashlib
import os

import dfkv

# Settings a connector accepts that only say how to reach the cluster.
CONTROL_KEYS = ("members", "mds_endpoints", "group", "client_id",
                "mds_token_file", "transport", "rdma_devices", "rdma_port",
                "rdma_expose", "local_dev", "tenant_secret_file",
                "conns_per_peer", "batch_concurrency", "connect_timeout_ms",
                "io_timeout_ms", "cooldown_ms")


# The namespace revision of a model whose revision is not known.
UNVERSIONED = "none"


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
              "connect_timeout_ms", "io_timeout_ms", "cooldown_ms"):
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
    hashed into the layout fingerprint.  An unknown revision ("") is
    UNVERSIONED (the field may not be empty).
    """
    fp = dfkv.layout_fingerprint([str(f).encode() for f in layout_fields])
    return dfkv.ns_build(tenant.encode(), model_id.encode(),
                         (model_revision or UNVERSIONED).encode(), layout_id.encode(),
                         str(dtype).encode(), fp, block_tokens, num_layers,
                         str(group).encode(), tp=tp, pp=pp, dp=dp, pcp=pcp,
                         dcp=dcp)


def open_client(cfg, ns):
    """A dfkv.Client for cfg's control settings and namespace ns."""
    kw = control_settings(cfg)
    return dfkv.Client(kw.pop("members", None), ns, **kw)


# ------------------------------------------------------ model identity

def model_revision(model):
    """The revision of the weights an engine serves as `model`: the commit of
    a Hugging Face cache snapshot (the directory given, or the one the
    hub's cache resolves `model` to), "" when none is known."""
    path = os.path.realpath(model) if os.path.isdir(model) else None
    if path is None:
        try:
            from huggingface_hub import try_to_load_from_cache
            hit = try_to_load_from_cache(model, "config.json")
        except Exception:       # no hub package, or a malformed repo id
            hit = None
        if not isinstance(hit, str):
            return ""
        path = os.path.dirname(hit)
    parent, leaf = os.path.split(path)
    if os.path.basename(parent) == "snapshots":
        return leaf
    return ""


def model_id(model):
    """The model id of `model`: the repository id of a Hugging Face cache
    snapshot directory ("models--org--name/snapshots/<rev>"), else the
    name the engine was given."""
    path = os.path.realpath(model) if os.path.isdir(model) else ""
    parts = path.split(os.sep)
    if len(parts) >= 3 and parts[-2] == "snapshots" and \
            parts[-3].startswith("models--"):
        return parts[-3][len("models--"):].replace("--", "/")
    return model


# ------------------------------------------------------------ layout pins

def layout_values(names, values):
    """The fingerprint fields of a layout: "name=value" strings, in the
    order of names (a connector's LAYOUT_FIELDS); values is a mapping
    that must hold every name and nothing else."""
    extra = set(values) - set(names)
    missing = [n for n in names if n not in values]
    if extra or missing:
        raise ValueError("layout fields: missing %s, unknown %s" %
                         (missing, sorted(extra)))
    return ["%s=%s" % (n, values[n]) for n in names]


def fields_digest(layout_id, names):
    """Hex SHA-256 of a layout id and its ordered field names: what the
    identity tests pin, so a field added, dropped or reordered without a
    new layout id fails them."""
    h = hashlib.sha256(layout_id.encode())
    for n in names:
        h.update(b"\0" + n.encode())
    return h.hexdigest()


def render_key(pool, hash, group, component, dp=(1, 0), tp=(1, 0),
               pcp=(1, 0), dcp=(1, 0), pp=(1, 0)):
    """The canonical object key (SPEC 1.2) of an engine block: hash is
    the engine's block hash (bytes), the ranks (size, rank) pairs with
    rank -1 where ranks hold identical bytes."""
    return dfkv.key_render(pool, hash, dp, tp, pcp, dcp, pp, group,
                           component)


# --------------------------------------------------------- async batches

class Inflight:
    """Batches submitted on one or more dfkv.Clients, each tagged by the
    connector, reaped without blocking.

    poll() returns [(tag, batch)] for the batches completed since the
    last poll (any client); drain() waits for every outstanding one and
    returns them all.  A batch submitted with tag None (fire and forget:
    touches) is reaped and dropped.
    """

    def __init__(self):
        self._tags = {}         # id(batch) -> (tag, batch)
        self._clients = []

    def add(self, client, batch, tag):
        if client not in self._clients:
            self._clients.append(client)
        self._tags[id(batch)] = (tag, batch)
        return batch

    def __len__(self):
        return len(self._tags)

    def poll(self):
        out = []
        for c in self._clients:
            for b in c.reap():
                tb = self._tags.pop(id(b), None)
                if tb is not None and tb[0] is not None:
                    out.append(tb)
        return out

    def drain(self):
        out = []
        while self._tags:
            for _, b in list(self._tags.values()):
                b.wait()
            out.extend(self.poll())
        return out


def register_pool(client, buf):
    """Register an engine's host pool (a writable buffer) with client for
    zero-copy RDMA; a client without RDMA (TCP, /dev/dfkv) uses the
    buffers as they are and has nothing to register."""
    try:
        client.register_memory(buf)
    except dfkv.DfkvError as e:
        if e.status != dfkv.ERRORS["E_NODEV"]:
            raise
