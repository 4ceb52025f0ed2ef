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
import json
import os
import re

import dfkv

# Settings a connector accepts that only say how to reach the cluster.
CONTROL_KEYS = ("members", "mds_endpoints", "group", "client_id",
                "mds_token_file", "transport", "rdma_devices", "rdma_port",
                "rdma_expose", "local_dev", "tenant_secret_file",
                "conns_per_peer", "batch_concurrency", "connect_timeout_ms",
                "io_timeout_ms", "cooldown_ms")
# Settings that copy a client's counters into the engine's
# prometheus_client registry (open_client(), dfkv.prometheus).
METRICS_KEYS = ("prometheus_interval_s", "prometheus_labels")
# Every setting open_client() reads.
CLIENT_KEYS = CONTROL_KEYS + METRICS_KEYS


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
    hashed into the layout fingerprint.  model_revision must be known
    (resolve_revision()).
    """
    if not model_revision:
        raise ConfigError("dfkv: the model's revision is not known")
    fp = dfkv.layout_fingerprint([str(f).encode() for f in layout_fields])
    return dfkv.ns_build(tenant.encode(), model_id.encode(),
                         model_revision.encode(), layout_id.encode(),
                         str(dtype).encode(), fp, block_tokens, num_layers,
                         str(group).encode(), tp=tp, pp=pp, dp=dp, pcp=pcp,
                         dcp=dcp)


def open_client(cfg, ns):
    """A dfkv.Client for cfg's control settings and namespace ns.  With
    `prometheus_interval_s` set, its counters are copied into the engine's
    prometheus_client registry that often (dfkv.prometheus), labeled with
    the mapping `prometheus_labels`, until the client is closed."""
    kw = control_settings(cfg)
    c = dfkv.Client(kw.pop("members", None), ns, **kw)
    every = cfg.get("prometheus_interval_s")
    if every not in (None, "", 0):
        from dfkv import prometheus
        try:
            prometheus.export(c, float(every),
                              **dict(cfg.get("prometheus_labels") or {}))
        except (ValueError, TypeError) as e:
            c.close()
            raise ConfigError("dfkv: prometheus_interval_s / "
                              "prometheus_labels: %s" % e) from e
    return c


# ------------------------------------------------------ model identity

# The largest safetensors header read for a weights digest (the format's
# own limit is 100 MB).
_SAFETENSORS_HEADER_MAX = 100 << 20


def _hub_snapshots(model):
    """The snapshot directories of repository `model` in the Hugging Face
    cache (HF_HUB_CACHE, or HF_HOME/hub), newest first; [] when none."""
    try:
        from huggingface_hub import constants
        root = constants.HF_HUB_CACHE
    except Exception:       # noqa: BLE001  (no hub package)
        root = os.environ.get("HF_HUB_CACHE") or os.path.join(
            os.environ.get("HF_HOME", os.path.expanduser("~/.cache/huggingface")),
            "hub")
    snaps = os.path.join(root, "models--" + model.replace("/", "--"),
                         "snapshots")
    try:
        names = os.listdir(snaps)
    except OSError:
        return []
    return [os.path.join(snaps, n) for n in names
            if os.path.isdir(os.path.join(snaps, n))]


def _weights_digest(path):
    """A digest of the weights' index in directory path: its config.json,
    every *.index.json, and each safetensors file's header (names, dtypes,
    shapes, offsets, metadata); for other weight files their names and
    sizes.  None when path holds no weights."""
    h = hashlib.sha256(b"dfkv-weights-index-v1")
    found = False
    for n in sorted(os.listdir(path)):
        p = os.path.join(path, n)
        if not os.path.isfile(p):
            continue
        if n == "config.json" or n.endswith(".index.json"):
            with open(p, "rb") as f:
                data = f.read()
            found |= n != "config.json"
        elif n.endswith(".safetensors"):
            with open(p, "rb") as f:
                head = f.read(8)
                size = int.from_bytes(head, "little") if len(head) == 8 else 0
                if not 0 < size <= _SAFETENSORS_HEADER_MAX:
                    raise ConfigError("dfkv: %s is not a safetensors file" % p)
                data = head + f.read(size)
            found = True
        elif n.endswith((".bin", ".pt", ".pth", ".gguf")):
            data = str(os.path.getsize(p)).encode()
            found = True
        else:
            continue
        h.update(n.encode() + b"\0" + len(data).to_bytes(8, "little") + data)
    return "sha256:" + h.hexdigest()[:32] if found else None


def resolve_revision(model, *given):
    """The revision of the weights an engine serves as `model` (SPEC 1.1:
    KV computed by other weights must never be served): the first of given
    that is set (the engine's own revision first, then the connector's
    `model_revision` setting: they must agree); else the commit of a
    Hugging Face snapshot directory, a digest of a local directory's
    weights index (_weights_digest), or the one snapshot the hub cache
    holds of repository `model`.  Raises ConfigError when it cannot be
    known (a repository with several cached revisions, none, or a
    directory without weights) rather than guess."""
    known = [str(g) for g in given if g not in (None, "")]
    if known:
        if any(k != known[0] for k in known[1:]):
            raise ConfigError("dfkv: model_revision %r differs from the "
                              "engine's revision %r" % (known[1], known[0]))
        return known[0]
    if os.path.isdir(model):
        path = os.path.realpath(model)
        parent, leaf = os.path.split(path)
        if os.path.basename(parent) == "snapshots":
            return leaf
        digest = _weights_digest(path)
        if digest:
            return digest
        why = "the directory %s holds no weights index" % path
    else:
        snaps = _hub_snapshots(model)
        if len(snaps) == 1:
            return os.path.basename(snaps[0])
        why = ("the Hugging Face cache holds %d revisions of %s" %
               (len(snaps), model)) if snaps else (
            "%s is neither a directory nor in the Hugging Face cache" % model)
    raise ConfigError("dfkv: cannot tell which revision of %s this engine "
                      "serves (%s): set 'model_revision' to the engine's "
                      "revision (e.g. vLLM's --revision)" % (model, why))


# Settings that name what changes a block's bytes beyond the checkpoint
# and its revision, and that no engine hands its connector whole: every
# connector requires both (WEIGHTS_HELP).
WEIGHTS_KEYS = ("quantization", "lora")
WEIGHTS_HELP = {
    "quantization": "the engine's weight quantization method (vLLM's and "
                    "SGLang's --quantization, e.g. \"fp8\", \"awq\"; the "
                    "checkpoint's quant_method when it comes quantized) or "
                    "\"none\"",
    "lora": "the LoRA adapters the engine may serve with their revisions "
            "(\"NAME@REVISION,...\") or \"none\"",
}
_WORD = re.compile(r"[A-Za-z0-9._:-]+\Z")


class Weights:
    """The weight quantization and LoRA adapters (name -> revision) of an
    engine: with the checkpoint's revision, what computed its KV."""

    def __init__(self, quantization="none", lora=()):
        self.quantization = quantization
        self.lora = tuple(sorted(lora))

    def lora_text(self):
        return ",".join("%s@%s" % a for a in self.lora) or "none"

    def revision(self, base):
        """The namespace's model_revision field (SPEC 1.1): the
        checkpoint's revision, then "+quant=Q" unless unquantized and
        "+lora=NAME@REV,..." when adapters are served; a plain engine's
        is the revision alone."""
        out = base
        if self.quantization != "none":
            out += "+quant=" + self.quantization
        if self.lora:
            out += "+lora=" + self.lora_text()
        return out


PLAIN = Weights()


def _checkpoint_config(model, revision):
    """The config.json of the checkpoint an engine serves as `model` at
    `revision` (a directory, or its Hugging Face cache snapshot); {} when
    it cannot be read here."""
    path = model if os.path.isdir(model) else None
    if path is None:
        snaps = [s for s in _hub_snapshots(model)
                 if os.path.basename(s) == revision]
        path = snaps[0] if snaps else None
    try:
        with open(os.path.join(path or "", "config.json")) as f:
            cfg = json.load(f)
    except (OSError, ValueError):
        return {}
    return cfg if isinstance(cfg, dict) else {}


def weights_of(cfg, model, revision, engine_quant=None, engine_lora=None):
    """The Weights of cfg's `quantization` and `lora` settings, both
    required (WEIGHTS_HELP).  What the engine itself tells is checked
    against them: engine_quant (its quantization method, when it hands
    it over), the checkpoint's quantization_config (a quantized
    checkpoint is never "none"), engine_lora (whether it serves LoRA
    adapters, None when it does not say).  Raises ConfigError naming the
    key."""
    for k in WEIGHTS_KEYS:
        if cfg.get(k) in (None, ""):
            raise ConfigError("dfkv: set '%s' to %s" % (k, WEIGHTS_HELP[k]))
    q = str(cfg["quantization"])
    if not _WORD.match(q):
        raise ConfigError("dfkv: 'quantization' %r is no method name" % q)
    ckpt = _checkpoint_config(model, revision).get("quantization_config")
    ckpt = ckpt.get("quant_method") if isinstance(ckpt, dict) else None
    if engine_quant not in (None, "") and str(engine_quant) != q:
        raise ConfigError("dfkv: 'quantization' %r differs from the "
                          "engine's %r" % (q, str(engine_quant)))
    if ckpt and q == "none":
        raise ConfigError("dfkv: 'quantization' is \"none\" but the "
                          "checkpoint of %s is quantized (%s): set it to "
                          "the engine's method" % (model, ckpt))
    text = str(cfg["lora"])
    lora = []
    if text != "none":
        for item in text.split(","):
            name, _, rev = item.strip().partition("@")
            if not (_WORD.match(name) and _WORD.match(rev)):
                raise ConfigError("dfkv: 'lora' entry %r is not NAME@REVISION"
                                  % item)
            lora.append((name, rev))
        if len(set(n for n, _ in lora)) != len(lora):
            raise ConfigError("dfkv: 'lora' names an adapter twice")
    if engine_lora is not None and bool(engine_lora) != bool(lora):
        raise ConfigError("dfkv: 'lora' is %r but the engine %s LoRA "
                          "adapters" % (text, "serves" if engine_lora
                                        else "serves no"))
    return Weights(q, lora)


def describe(engine, cfg, tenant, ns_fields):
    """The connector's one start-up line: nodes, tenant, namespace fields
    (revision included) and transport."""
    nodes = cfg.get("members") or "mdsd %s group %s" % (
        cfg.get("mds_endpoints"), cfg.get("group"))
    return "dfkv %s connector: nodes %s, tenant %s, transport %s, %s" % (
        engine, nodes, tenant, cfg.get("transport") or "auto",
        ", ".join("%s=%s" % kv for kv in ns_fields))


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
