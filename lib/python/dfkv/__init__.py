# SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT
"""dfkv: Python binding of libdfkv (ctypes, no compiled extension).

This module owns the Python face of the C library: identity builders
(namespace descriptor, layout fingerprint, object key, block key), the
Ketama ring, and the client.  Every computation runs in libdfkv.so; the
binding only marshals arguments.  The library is loaded from $DFKV_LIB
when set, else by its soname libdfkv.so.0.

Values may be any object with the buffer protocol (bytes, bytearray,
memoryview, numpy arrays); reads can land in a caller's writable buffer
without a copy.
"""

import asyncio
import ctypes
import os
from ctypes import (POINTER, Structure, byref, c_char, c_char_p, c_int,
                    c_int32, c_size_t, c_uint, c_uint8, c_uint32, c_uint64,
                    c_void_p)

__all__ = [
    "DfkvError", "version", "strerror", "layout_fingerprint", "ns_build",
    "tenant_identity", "tenant_hash", "object_id", "block_key", "key_render",
    "key_parse", "auth2_proofs", "Ring", "Client", "Batch", "Lease",
    "PROBE_NODE", "PROBE_DISK", "STATUS", "ERRORS", "CANCELLED",
]

from .names import STATUS  # enum dfkv_status, generated from uapi/dfkv.yaml

_lib = ctypes.CDLL(os.environ.get("DFKV_LIB") or "libdfkv.so.0")

# enum dfkv_error (lib/dfkv.h)
ERRORS = {
    "E_INVAL": -1, "E_NOMEM": -2, "E_RANGE": -3, "E_UNAVAILABLE": -4,
    "E_TIMEOUT": -5, "E_PROTO": -6, "E_NOT_RUN": -7, "E_MEMBERS": -8,
    "E_NODEV": -9, "E_SYS": -10, "E_AUTH": -11, "E_CANCELLED": -12,
}
OK = 0
NOT_FOUND = 1
QUOTA_EXCEEDED = 5
TOO_LARGE = 8
FORBIDDEN = 10
E_RANGE = -3
E_NODEV = -9
CANCELLED = -12         # DFKV_E_CANCELLED: an async op cancelled unsent
PROBE_NODE = 0
PROBE_DISK = 4
OBJECT_ID_LEN = 16
KEY_HASH_MAX = 64
KEY_RENDER_MAX = 640
TENANT_SECRET_LEN = 32
AUTH_NONCE_LEN = 32
LEASE_TTL_DEFAULT_MS = 10000  # DFKV_LEASE_TTL_DEFAULT_MS: a LEASE's ttl 0
TRANSPORTS = {"auto": 0, "tcp": 1, "local": 2, "rdma": 3}
RDMA_EXPOSE = {"request": 1, "request-mr": 2, "request-mw": 3, "pool": 4}


class DfkvError(Exception):
    """A libdfkv call failed; .status is the dfkv status or error code."""

    def __init__(self, status, what=""):
        self.status = status
        msg = strerror(status)
        super().__init__(f"{what}: {msg} ({status})" if what else
                         f"{msg} ({status})")


class _Span(Structure):
    _fields_ = [("ptr", c_void_p), ("len", c_uint64)]


class _NsDesc(Structure):
    _fields_ = [
        ("size", c_uint32), ("reserved", c_uint32),
        ("tenant", _Span), ("model_id", _Span), ("model_revision", _Span),
        ("layout_id", _Span), ("dtype", _Span),
        ("layout_fingerprint", c_uint64),
        ("block_tokens", c_uint32), ("num_layers", c_uint32),
        ("group", _Span),
        ("tp", c_uint32), ("pp", c_uint32), ("dp", c_uint32),
        ("pcp", c_uint32), ("dcp", c_uint32), ("reserved2", c_uint32),
    ]


class _Rank(Structure):
    _fields_ = [("size", c_uint32), ("rank", c_int32)]


class _KeyDesc(Structure):
    _fields_ = [
        ("size", c_uint32), ("group", c_uint32),
        ("pool", _Span), ("hash", _Span),
        ("dp", _Rank), ("tp", _Rank), ("pcp", _Rank), ("dcp", _Rank),
        ("pp", _Rank),
        ("component", _Span),
        ("sg_width", c_uint32), ("sg_group", c_uint32),
    ]


class _Iov(Structure):
    _fields_ = [("base", c_void_p), ("len", c_uint64)]


class _BlockKey(Structure):
    _fields_ = [("tenant", c_uint64), ("id", c_uint8 * OBJECT_ID_LEN)]


class _RingMember(Structure):
    _fields_ = [("name", c_char_p), ("weight", c_uint32)]


class _Options(Structure):
    _fields_ = [
        ("size", c_uint32), ("transport", c_uint32),
        ("members", c_char_p), ("ns", c_void_p), ("ns_len", c_uint64),
        ("batch_concurrency", c_uint32), ("conns_per_peer", c_uint32),
        ("connect_timeout_ms", c_uint32), ("io_timeout_ms", c_uint32),
        ("cooldown_ms", c_uint32), ("reserved", c_uint32),
        ("local_dev", c_char_p),
        ("mds_endpoints", c_char_p), ("group", c_char_p),
        ("client_id", c_char_p), ("mds_poll_ms", c_uint32),
        ("mds_grace_ms", c_uint32), ("client_ttl_ms", c_uint32),
        ("reserved2", c_uint32),
        ("rdma_devices", c_char_p), ("rdma_port", c_uint32),
        ("reserved3", c_uint32),
        ("mds_token_file", c_char_p),
        ("rdma_expose", c_uint32), ("reserved4", c_uint32),
        ("tenant_secret", c_void_p), ("tenant_secret_file", c_char_p),
    ]


def _proto(name, res, *args):
    f = getattr(_lib, name)
    f.restype = res
    f.argtypes = list(args)
    return f


_P = c_void_p
_U64P = POINTER(c_uint64)
_proto("dfkv_version", c_char_p)
_proto("dfkv_strerror", c_char_p, c_int)
_proto("dfkv_ns_build", c_int, POINTER(_NsDesc), _P, c_uint64, _U64P)
_proto("dfkv_ns_tenant_identity", c_int, _P, c_uint64, _U64P, _U64P)
_proto("dfkv_layout_fingerprint", c_int, POINTER(_Span), c_size_t, _U64P)
_proto("dfkv_key_render", c_int, POINTER(_KeyDesc), _P, c_uint64, _U64P)
_proto("dfkv_key_parse", c_int, _P, c_uint64, POINTER(_KeyDesc), _P)
_proto("dfkv_object_id", c_int, _P, c_uint64, _P, c_uint64, _P)
_proto("dfkv_tenant_hash", c_int, _P, c_uint64, _U64P)
_proto("dfkv_block_key", c_int, _P, c_uint64, _P, c_uint64,
       POINTER(_BlockKey))
_proto("dfkv_auth2_proofs", c_int, _P, _P, c_size_t, _P, _P, c_uint64, _P,
       _P)
_proto("dfkv_ring_build", c_int, POINTER(_RingMember), c_size_t,
       POINTER(c_void_p))
_proto("dfkv_ring_route", c_int, c_void_p, _P, c_uint, POINTER(c_size_t))
_proto("dfkv_ring_member_name", c_char_p, c_void_p, c_size_t)
_proto("dfkv_ring_size", c_size_t, c_void_p)
_proto("dfkv_ring_free", None, c_void_p)


def version():
    """The library version string."""
    return _lib.dfkv_version().decode()


def strerror(status):
    """Name of a dfkv status (>= 0) or library error (< 0)."""
    return _lib.dfkv_strerror(int(status)).decode()


def _check(rc, what):
    if rc != 0:
        raise DfkvError(rc, what)


class _In:
    """A read-only view of bytes-like data as (pointer, length).

    str is encoded as UTF-8; contiguous buffers are passed without a copy
    where ctypes allows it (writable buffers), else copied once.  The
    object keeps what the pointer refers to alive.
    """

    __slots__ = ("ptr", "len", "_keep")

    def __init__(self, data):
        if isinstance(data, str):
            data = data.encode()
        if isinstance(data, bytes):
            self._keep = data
            self.ptr = ctypes.cast(c_char_p(data), c_void_p).value if data else None
            self.len = len(data)
            return
        mv = memoryview(data)
        if not mv.c_contiguous:
            raise ValueError("buffer must be C-contiguous")
        mv = mv.cast("B")
        self.len = mv.nbytes
        if mv.readonly:
            b = mv.tobytes()
            self._keep = b
            self.ptr = ctypes.cast(c_char_p(b), c_void_p).value if b else None
        elif self.len:
            arr = (c_char * self.len).from_buffer(mv)
            self._keep = (mv, arr)
            self.ptr = ctypes.addressof(arr)
        else:
            self._keep = mv
            self.ptr = None

    def span(self):
        return _Span(self.ptr, self.len)


class _Out:
    """A writable buffer (bytearray, numpy array, memoryview) as a pointer."""

    __slots__ = ("ptr", "len", "_keep")

    def __init__(self, data):
        mv = memoryview(data)
        if mv.readonly or not mv.c_contiguous:
            raise ValueError("destination must be a writable C-contiguous "
                             "buffer")
        mv = mv.cast("B")
        self.len = mv.nbytes
        if self.len:
            arr = (c_char * self.len).from_buffer(mv)
            self._keep = (mv, arr)
            self.ptr = ctypes.addressof(arr)
        else:
            self._keep = mv
            self.ptr = None


# ---------------------------------------------------------------- identity

def layout_fingerprint(fields):
    """SPEC 1.1 layout fingerprint (int) of shape/stride fields, in order."""
    ins = [_In(f) for f in fields]
    arr = (_Span * max(len(ins), 1))(*[i.span() for i in ins])
    out = c_uint64()
    _check(_lib.dfkv_layout_fingerprint(arr, len(ins), byref(out)),
           "layout_fingerprint")
    return out.value


def ns_build(tenant, model_id, model_revision, layout_id, dtype,
             layout_fingerprint, block_tokens, num_layers, group,
             topology=None, *, tp=1, pp=1, dp=1, pcp=1, dcp=1):
    """The canonical namespace descriptor bytes (SPEC 1.1).

    The replicated topology sizes are given either as a tuple
    topology=(tp, pp, dp, pcp, dcp) or as the keywords tp..dcp.
    """
    if topology is not None:
        tp, pp, dp, pcp, dcp = topology
    ins = [_In(x) for x in (tenant, model_id, model_revision, layout_id,
                            dtype, group)]
    d = _NsDesc()
    d.size = ctypes.sizeof(_NsDesc)
    d.tenant, d.model_id, d.model_revision, d.layout_id, d.dtype, d.group = \
        [i.span() for i in ins]
    d.layout_fingerprint = layout_fingerprint
    d.block_tokens, d.num_layers = block_tokens, num_layers
    d.tp, d.pp, d.dp, d.pcp, d.dcp = tp, pp, dp, pcp, dcp
    n = c_uint64()
    rc = _lib.dfkv_ns_build(byref(d), None, 0, byref(n))
    if rc != E_RANGE:
        _check(rc, "ns_build")
    buf = ctypes.create_string_buffer(n.value)
    _check(_lib.dfkv_ns_build(byref(d), buf, n.value, byref(n)), "ns_build")
    return buf.raw[:n.value]


def tenant_identity(ns):
    """The tenant identity bytes of a namespace (SPEC 1.3)."""
    i = _In(ns)
    off, ln = c_uint64(), c_uint64()
    _check(_lib.dfkv_ns_tenant_identity(i.ptr, i.len, byref(off), byref(ln)),
           "tenant_identity")
    return ctypes.string_at(i.ptr + off.value, ln.value)


def tenant_hash(ns):
    """tenant_hash (int) of a namespace (SPEC 1.3)."""
    i = _In(ns)
    out = c_uint64()
    _check(_lib.dfkv_tenant_hash(i.ptr, i.len, byref(out)), "tenant_hash")
    return out.value


def auth2_proofs(secret, node_name, server_nonce, client_nonce, tenant):
    """The AUTH2 proofs (SPEC 9) as (client_proof, server_proof), 32 bytes
    each: HMAC-SHA256(secret, "C" || T) and ("S" || T), T = "DFKVAUTH2" ||
    u8(len(node_name)) || node_name || server_nonce || client_nonce ||
    u64le(tenant), for a 32-byte secret and nonces, the node's name (str
    or bytes, 1..63 bytes) and a tenant hash (int)."""
    s, sn, cn = bytes(secret), bytes(server_nonce), bytes(client_nonce)
    name = node_name.encode() if isinstance(node_name, str) else \
        bytes(node_name)
    if len(s) != TENANT_SECRET_LEN or len(sn) != AUTH_NONCE_LEN or \
            len(cn) != AUTH_NONCE_LEN:
        raise DfkvError(ERRORS["E_INVAL"], "auth2_proofs: 32-byte secret "
                        "and nonces")
    cp, sp = (c_uint8 * 32)(), (c_uint8 * 32)()
    _check(_lib.dfkv_auth2_proofs(s, name, len(name), sn, cn, tenant, cp,
                                  sp), "auth2_proofs")
    return bytes(cp), bytes(sp)


def object_id(ns, key):
    """The 16-byte object id of (namespace, key) (SPEC 1.3)."""
    n, k = _In(ns), _In(key)
    out = (c_uint8 * OBJECT_ID_LEN)()
    _check(_lib.dfkv_object_id(n.ptr, n.len, k.ptr, k.len, out), "object_id")
    return bytes(out)


def block_key(ns, key):
    """(tenant_hash, object_id) of (namespace, key)."""
    n, k = _In(ns), _In(key)
    bk = _BlockKey()
    _check(_lib.dfkv_block_key(n.ptr, n.len, k.ptr, k.len, byref(bk)),
           "block_key")
    return bk.tenant, bytes(bk.id)


def key_render(pool, hash, dp, tp, pcp, dcp, pp, group, component, sg=None):
    """The canonical object key bytes (SPEC 1.2).

    hash is the raw content hash (bytes); dp..pp are (size, rank) pairs
    with rank -1 for "replicated"; sg is None or (width, group).
    """
    ins = [_In(pool), _In(hash), _In(component)]
    d = _KeyDesc()
    d.size = ctypes.sizeof(_KeyDesc)
    d.pool, d.hash, d.component = [i.span() for i in ins]
    d.dp, d.tp, d.pcp, d.dcp, d.pp = [_Rank(*r) for r in (dp, tp, pcp, dcp,
                                                          pp)]
    d.group = group
    if sg is not None:
        d.sg_width, d.sg_group = sg
    buf = ctypes.create_string_buffer(KEY_RENDER_MAX)
    n = c_uint64()
    _check(_lib.dfkv_key_render(byref(d), buf, KEY_RENDER_MAX, byref(n)),
           "key_render")
    return buf.raw[:n.value]


def key_parse(key):
    """Fields of a canonical object key (the inverse of key_render)."""
    k = _In(key)
    d = _KeyDesc()
    hb = (c_uint8 * KEY_HASH_MAX)()
    _check(_lib.dfkv_key_parse(k.ptr, k.len, byref(d), hb), "key_parse")

    def s(span):
        return ctypes.string_at(span.ptr, span.len)

    return {
        "pool": s(d.pool).decode(), "hash": s(d.hash),
        "dp": (d.dp.size, d.dp.rank), "tp": (d.tp.size, d.tp.rank),
        "pcp": (d.pcp.size, d.pcp.rank), "dcp": (d.dcp.size, d.dcp.rank),
        "pp": (d.pp.size, d.pp.rank), "group": d.group,
        "component": s(d.component).decode(),
        "sg": (d.sg_width, d.sg_group) if d.sg_width else None,
    }


# ----------------------------------------------------------------- routing

class Ring:
    """A Ketama ring over [(name, weight), ...] (SPEC 1.4)."""

    def __init__(self, members):
        members = [(m, 1) if isinstance(m, (str, bytes)) else m
                   for m in members]
        names = [n.encode() if isinstance(n, str) else bytes(n)
                 for n, _ in members]
        arr = (_RingMember * max(len(members), 1))(
            *[_RingMember(n, w) for n, (_, w) in zip(names, members)])
        self._ring = c_void_p()
        _check(_lib.dfkv_ring_build(arr, len(members), byref(self._ring)),
               "ring_build")

    def route_index(self, oid, probe_off=PROBE_NODE):
        """Index of the member owning a 16-byte object id."""
        if len(oid) != OBJECT_ID_LEN:
            raise ValueError("object id must be 16 bytes")
        m = c_size_t()
        _check(_lib.dfkv_ring_route(self._ring, bytes(oid), probe_off,
                                    byref(m)), "ring_route")
        return m.value

    def route(self, oid, probe_off=PROBE_NODE):
        """Name of the member owning a 16-byte object id."""
        return _lib.dfkv_ring_member_name(
            self._ring, self.route_index(oid, probe_off)).decode()

    def __len__(self):
        return _lib.dfkv_ring_size(self._ring)

    def close(self):
        if self._ring:
            _lib.dfkv_ring_free(self._ring)
            self._ring = c_void_p()

    __del__ = close


# ------------------------------------------------------------------ client

_C = c_void_p
_VPP = POINTER(c_void_p)
_proto("dfkv_open_v2", c_int, POINTER(_Options), POINTER(c_void_p))
_proto("dfkv_close", None, _C)
_proto("dfkv_register_memory", c_int, _C, _P, c_uint64)
_proto("dfkv_unregister_memory", c_int, _C, _P)
_proto("dfkv_put", c_int, _C, _P, c_uint64, _P, c_uint64)
_proto("dfkv_get", c_int, _C, _P, c_uint64, _P, c_uint64, _U64P)
_proto("dfkv_get_range", c_int, _C, _P, c_uint64, c_uint64, c_uint64, _P,
       c_uint64, _U64P, _U64P)
_proto("dfkv_exist", c_int, _C, _P, c_uint64, _U64P)
_proto("dfkv_remove", c_int, _C, _P, c_uint64)
_proto("dfkv_touch", c_int, _C, _VPP, _U64P, c_size_t)
_proto("dfkv_touch_walk", c_int, _C, _VPP, _U64P, c_size_t, c_uint32)
_proto("dfkv_probe", c_int, _C, _VPP, _U64P, c_size_t, _U64P)
_proto("dfkv_lease", c_int, _C, _VPP, _U64P, c_size_t, c_uint32, _U64P,
       POINTER(c_size_t), POINTER(c_void_p))
_proto("dfkv_release", c_int, _C, c_void_p)
_proto("dfkv_put_batch", c_int, _C, c_size_t, _VPP, _U64P, _VPP, _U64P,
       POINTER(c_int))
_proto("dfkv_get_batch", c_int, _C, c_size_t, _VPP, _U64P, _VPP, _U64P,
       _U64P, POINTER(c_int))
_proto("dfkv_exist_batch", c_int, _C, c_size_t, _VPP, _U64P, _U64P,
       POINTER(c_int))
_proto("dfkv_remove_batch", c_int, _C, c_size_t, _VPP, _U64P, POINTER(c_int))
_IOVP = POINTER(_Iov)
_proto("dfkv_put_sg", c_int, _C, _P, c_uint64, _IOVP, c_size_t)
_proto("dfkv_get_sg", c_int, _C, _P, c_uint64, c_uint64, c_uint64, _IOVP,
       c_size_t, _U64P, _U64P)
_proto("dfkv_put_sg_batch", c_int, _C, c_size_t, _VPP, _U64P,
       POINTER(_IOVP), POINTER(c_size_t), POINTER(c_int))
_proto("dfkv_get_sg_batch", c_int, _C, c_size_t, _VPP, _U64P,
       POINTER(_IOVP), POINTER(c_size_t), _U64P, POINTER(c_int))
_proto("dfkv_locate", c_int, _C, _P, c_uint64, POINTER(c_char_p),
       POINTER(_BlockKey))
_proto("dfkv_stats_snapshot", c_int, _C, c_char_p, c_uint64, _U64P)


class _BatchDesc(Structure):
    _fields_ = [
        ("size", c_uint32), ("op", c_uint32), ("n", c_uint64),
        ("keys", _VPP), ("key_lens", _U64P),
        ("iovs", POINTER(_IOVP)), ("iovcnts", POINTER(c_size_t)),
        ("ttl_ms", c_uint32), ("flags", c_uint32), ("user", c_uint64),
    ]


_B = c_void_p
_proto("dfkv_submit", c_int, _C, POINTER(_BatchDesc), POINTER(c_void_p))
_proto("dfkv_batch_fd", c_int, _C)
_proto("dfkv_reap", c_int, _C, POINTER(c_void_p), c_int)
_proto("dfkv_batch_cancel", c_int, _B)
_proto("dfkv_batch_wait", c_int, _B, c_int)
_proto("dfkv_batch_done", c_int, _B)
_proto("dfkv_batch_status", c_int, _B)
_proto("dfkv_batch_result", c_int, _B, c_uint64, POINTER(c_int), _U64P)
_proto("dfkv_batch_hits", c_uint64, _B)
_proto("dfkv_batch_lease", c_void_p, _B)
_proto("dfkv_batch_free", None, _B)
# enum dfkv_op values of the batch kinds (uapi/linux/dfkv.h)
_OP_PUT, _OP_GET, _OP_EXIST = 1, 2, 3
_OP_TOUCH, _OP_PROBE, _OP_LEASE = 10, 11, 12
TOUCH_REVERSE = 1 << 0  # DFKV_TOUCH_REVERSE


def _spans(items):
    ins = [_In(x) for x in items]
    n = max(len(ins), 1)
    ptrs = (c_void_p * n)(*[i.ptr for i in ins])
    lens = (c_uint64 * n)(*[i.len for i in ins])
    return ins, ptrs, lens


def _iovs(bufs, out):
    """(keep-alive, struct dfkv_iov array, count) of a list of buffers:
    readable ones (_In) for a PUT, writable ones (_Out) for a GET.  A
    single buffer (not a list or tuple) is a list of one."""
    if not isinstance(bufs, (list, tuple)):
        bufs = [bufs]
    views = [(_Out if out else _In)(b) for b in bufs]
    arr = (_Iov * max(len(views), 1))(*[_Iov(v.ptr, v.len) for v in views])
    return views, arr, len(views)


class Lease:
    """Pins from Client.lease(); release() (or the with-block) drops them."""

    def __init__(self, client, handle, hits, stored_lens):
        self._client, self._h = client, handle
        self.hits, self.stored_lens = hits, stored_lens

    def release(self):
        if self._h:
            h, self._h = self._h, None
            return self._client._release(h)
        return OK

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


class Batch:
    """An asynchronous batch (dfkv_submit) from Client.submit_*().

    It keeps the keys' buffers alive until it completed.  done, wait()
    and cancel() work at any time; status and results once done (results
    of a failed LEASE raise DfkvError).  A batch is handed out by
    Client.reap() exactly once; await Client.run(batch) waits for it from
    an asyncio loop."""

    def __init__(self, client, handle, op, n, keep):
        self._client, self._h = client, handle
        self._op, self._n, self._keep = op, n, keep
        self._status = None     # set once collected
        self._results = None

    @property
    def done(self):
        if self._status is not None:
            return True
        return bool(_lib.dfkv_batch_done(self._h))

    def wait(self, timeout=None):
        """Block until done (timeout in seconds, None: forever); whether
        it is done.  It is still reaped as usual."""
        if self._status is not None:
            return True
        ms = -1 if timeout is None else max(int(timeout * 1000), 0)
        return _lib.dfkv_batch_wait(self._h, ms) == OK

    def cancel(self):
        """Cancel what has not been sent (those ops complete CANCELLED)."""
        if self._status is None:
            _lib.dfkv_batch_cancel(self._h)

    def _need(self):
        if self._status is None:
            if not self.done:
                raise DfkvError(ERRORS["E_INVAL"], "batch is not done")
            self._collect()

    @property
    def status(self):
        """The batch's status as a whole (OK unless an argument or
        transport failure, or CANCELLED)."""
        self._need()
        return self._status

    @property
    def results(self):
        """put: [status]; get: [(status, stored_len)]; exist: [status];
        probe: leading hits (int); lease: a Lease; touch: the status."""
        self._need()
        if isinstance(self._results, DfkvError):
            raise self._results
        return self._results

    def _collect(self):
        """Read the results out of the done C batch (once)."""
        if self._status is not None:
            return
        h, n = self._h, self._n
        st, ln = c_int(), c_uint64()
        status = _lib.dfkv_batch_status(h)
        if self._op in (_OP_PUT, _OP_GET, _OP_EXIST):
            res = []
            for i in range(n):
                _lib.dfkv_batch_result(h, i, byref(st), byref(ln))
                res.append((st.value, ln.value) if self._op == _OP_GET
                           else st.value)
        elif self._op == _OP_PROBE:
            res = _lib.dfkv_batch_hits(h)
        elif self._op == _OP_LEASE:
            hits = _lib.dfkv_batch_hits(h)
            lens = []
            for i in range(hits):
                _lib.dfkv_batch_result(h, i, byref(st), byref(ln))
                lens.append(ln.value)
            lh = _lib.dfkv_batch_lease(h)
            res = Lease(self._client, lh, hits, lens) if lh else None
            if status != OK:
                if res is not None:
                    res.release()
                res = DfkvError(status, "lease")
        else:
            res = status
        self._results, self._status = res, status
        self._keep = None

    def _free(self):
        if self._h:
            h, self._h = self._h, None
            _lib.dfkv_batch_free(h)

    def __await__(self):
        return self._client.run(self).__await__()


class Client:
    """A dfkv client (dfkv_open_v2).

    members: "name=host:port[@weight],..." or a list of such entries;
    ns: namespace bytes (e.g. from ns_build()); transport: "auto", "tcp",
    "local" or "rdma" (rdma_devices: a whitelist, a string or a list;
    rdma_port: the nodes' RDMA port, with "auto" it turns RDMA on;
    rdma_expose: "request" (default), "request-mr", "request-mw" or
    "pool", what of this client's memory a node may touch, see
    lib/README.md).
    Methods return the dfkv status where a miss is normal (get,
    exist) and raise DfkvError for argument errors.

    Discovery: members=None and mds_endpoints="http://h:7480[,...]" (a
    string or a list) follow the members of `group` in mdsd; client_id
    registers this client there (see lib/README.md); mds_token_file names
    mdsd's client token file (mdsd --client-token-file).

    Tenants (SPEC 9): tenant_secret is the secret registered for ns's
    tenant on the nodes, either its 32 bytes (bytes-like) or the path
    (str or os.PathLike) of a file holding it as 64 hex digits (mode
    0600).  Every connection then authenticates; a node that requires
    auth answers requests it refused with FORBIDDEN, never a miss.
    """

    def __init__(self, members, ns, transport="auto", batch_concurrency=0,
                 conns_per_peer=0, connect_timeout_ms=0, io_timeout_ms=0,
                 cooldown_ms=0, local_dev=None, mds_endpoints=None,
                 group=None, client_id=None, mds_poll_ms=0, mds_grace_ms=0,
                 client_ttl_ms=0, rdma_devices=None, rdma_port=0,
                 mds_token_file=None, rdma_expose="request",
                 tenant_secret=None):
        def _b(v):
            if v is not None and not isinstance(v, (str, bytes)):
                v = ",".join(v)
            return v.encode() if isinstance(v, str) else v
        members = _b(members)
        self._ns = _In(ns)
        self._members = members
        self._dev = _b(local_dev)
        self._mds = (_b(mds_endpoints), _b(group), _b(client_id))
        self._token_file = _b(mds_token_file)
        self._rdev = _b(rdma_devices)
        self._secret = self._secret_file = None
        if isinstance(tenant_secret, (str, os.PathLike)):
            self._secret_file = os.fsencode(tenant_secret)
        elif tenant_secret is not None:
            self._secret = bytes(tenant_secret)
            if len(self._secret) != TENANT_SECRET_LEN:
                raise DfkvError(ERRORS["E_INVAL"], "tenant_secret: 32 "
                                "bytes, or the path of a secret file")
        self._pools = {}
        self._live = {}         # C handle -> Batch not yet reaped
        self._unclaimed = []    # reaped for run(), not awaited by it
        self._waiters = {}      # id(Batch) -> futures of run()
        self._reader = None     # the loop fileno() is registered with
        o = _Options()
        o.size = ctypes.sizeof(_Options)
        o.transport = TRANSPORTS[transport]
        o.members = self._members
        o.ns, o.ns_len = self._ns.ptr, self._ns.len
        o.batch_concurrency = batch_concurrency
        o.conns_per_peer = conns_per_peer
        o.connect_timeout_ms = connect_timeout_ms
        o.io_timeout_ms = io_timeout_ms
        o.cooldown_ms = cooldown_ms
        o.local_dev = self._dev
        o.mds_endpoints, o.group, o.client_id = self._mds
        o.mds_poll_ms = mds_poll_ms
        o.mds_grace_ms = mds_grace_ms
        o.client_ttl_ms = client_ttl_ms
        o.rdma_devices = self._rdev
        o.rdma_port = rdma_port
        o.mds_token_file = self._token_file
        o.rdma_expose = RDMA_EXPOSE[rdma_expose]
        o.tenant_secret = ctypes.cast(ctypes.c_char_p(self._secret),
                                      c_void_p) if self._secret else None
        o.tenant_secret_file = self._secret_file
        self._c = c_void_p()
        self._secret = None     # libdfkv has its copy, or failed
        _check(_lib.dfkv_open_v2(byref(o), byref(self._c)), "open")

    def close(self):
        """Close the client: batches not done are cancelled and complete
        (their results stay readable), then libdfkv lets go of them."""
        if getattr(self, "_c", None):
            live = list(self._live.values())
            for b in live:
                b.cancel()
            for b in live:
                b.wait()
                b._collect()
                b._free()
            self._live.clear()
            self._drop_reader()
            _lib.dfkv_close(self._c)
            self._c = c_void_p()

    __del__ = close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _handle(self):
        if not self._c:
            raise DfkvError(ERRORS["E_INVAL"], "client is closed")
        return self._c

    def _pool_of(self, o):
        """The registered pool containing the buffer o, or None."""
        for p in self._pools.values():
            if p.ptr <= o.ptr and o.ptr + o.len <= p.ptr + p.len:
                return p
        return None

    def register_memory(self, buf):
        """Register a writable buffer (bytearray, numpy array, memoryview:
        an engine's pinned host pool, GBs) once, so RDMA requests on
        buffers inside it need no registration of their own
        (dfkv_register_memory).  A buffer inside a registered one is a
        no-op; one containing registered ones (the pool re-declared
        larger) replaces them.  Without RDMA the buffer is only kept (TCP
        and /dev/dfkv use any buffer as it is).  The buffer is kept alive
        until unregister_memory or close."""
        o = _Out(buf)
        if o.len and self._pool_of(o) is not None:
            return
        rc = _lib.dfkv_register_memory(self._handle(), o.ptr, o.len)
        if rc != E_NODEV or not o.len:
            _check(rc, "register_memory")
        for base, p in list(self._pools.items()):
            if o.ptr <= p.ptr and p.ptr + p.len <= o.ptr + o.len:
                del self._pools[base]
        self._pools[o.ptr] = o

    def unregister_memory(self, buf):
        """Drop a registration made by register_memory(buf) (a buffer
        that was inside a registered one: nothing to drop)."""
        o = _Out(buf)
        p = self._pools.get(o.ptr)
        if p is None and o.len and self._pool_of(o) is not None:
            return
        rc = _lib.dfkv_unregister_memory(self._handle(), o.ptr)
        if rc != E_NODEV or p is None:
            _check(rc, "unregister_memory")
        self._pools.pop(o.ptr, None)

    def put(self, key, value):
        """Store value (bytes-like, non-empty); returns the status."""
        k, v = _In(key), _In(value)
        return _lib.dfkv_put(self._handle(), k.ptr, k.len, v.ptr, v.len)

    def get(self, key, out=None, cap=None):
        """(status, data).  With out (a writable buffer, e.g. a numpy
        array) the value lands there and data is its length; otherwise
        data is bytes (cap: buffer size to use, default from EXIST)."""
        k = _In(key)
        n = c_uint64()
        if out is not None:
            o = _Out(out)
            st = _lib.dfkv_get(self._handle(), k.ptr, k.len, o.ptr, o.len,
                               byref(n))
            return st, n.value
        if cap is None:
            st, cap = self.exist(key)
            if st != OK:
                return st, None
        buf = ctypes.create_string_buffer(max(int(cap), 1))
        st = _lib.dfkv_get(self._handle(), k.ptr, k.len, buf, len(buf),
                           byref(n))
        return st, (buf.raw[:n.value] if st == OK else None)

    def get_range(self, key, offset, length, out):
        """(status, bytes written, stored length) of a range into out."""
        k, o = _In(key), _Out(out)
        n, s = c_uint64(), c_uint64()
        st = _lib.dfkv_get_range(self._handle(), k.ptr, k.len, offset,
                                 length, o.ptr, o.len, byref(n), byref(s))
        return st, n.value, s.value

    def put_sg(self, key, buffers):
        """Store the concatenation of a list of buffers (bytes-like,
        numpy arrays; empty ones are skipped) without joining them;
        returns the status."""
        k = _In(key)
        _keep, arr, n = _iovs(buffers, False)
        return _lib.dfkv_put_sg(self._handle(), k.ptr, k.len, arr, n)

    def get_sg(self, key, buffers, offset=0, length=0):
        """(status, length): scatter a range (offset 0, length 0: the
        whole value) across a list of writable buffers (numpy arrays,
        bytearrays) in order.  length is the bytes written, or with
        TOO_LARGE (the range is wider than the buffers' total) the stored
        length."""
        k = _In(key)
        _keep, arr, n = _iovs(buffers, True)
        got, stored = c_uint64(), c_uint64()
        st = _lib.dfkv_get_sg(self._handle(), k.ptr, k.len, offset, length,
                              arr, n, byref(got), byref(stored))
        return st, stored.value if st == TOO_LARGE else got.value

    def put_sg_batch(self, keys, buffer_lists):
        """[status per item]; item i stores the concatenation of
        buffer_lists[i]."""
        n = len(keys)
        _, kp, kl = _spans(keys)
        lists = [_iovs(b, False) for b in buffer_lists]
        iv = (_IOVP * max(n, 1))(*[ctypes.cast(a, _IOVP) for _, a, _ in
                                   lists])
        cnt = (c_size_t * max(n, 1))(*[c for _, _, c in lists])
        st = (c_int * max(n, 1))()
        rc = _lib.dfkv_put_sg_batch(self._handle(), n, kp, kl, iv, cnt, st)
        if rc < 0:
            raise DfkvError(rc, "put_sg_batch")
        return list(st)[:n]

    def get_sg_batch(self, keys, buffer_lists):
        """[(status, length)]: whole values scattered across the writable
        buffer_lists[i] (length: bytes written, or the stored length with
        TOO_LARGE)."""
        n = len(keys)
        _, kp, kl = _spans(keys)
        lists = [_iovs(b, True) for b in buffer_lists]
        iv = (_IOVP * max(n, 1))(*[ctypes.cast(a, _IOVP) for _, a, _ in
                                   lists])
        cnt = (c_size_t * max(n, 1))(*[c for _, _, c in lists])
        lens = (c_uint64 * max(n, 1))()
        st = (c_int * max(n, 1))()
        rc = _lib.dfkv_get_sg_batch(self._handle(), n, kp, kl, iv, cnt, lens,
                                    st)
        if rc < 0:
            raise DfkvError(rc, "get_sg_batch")
        return list(zip(list(st)[:n], list(lens)[:n]))

    def exist(self, key):
        """(status, stored length)."""
        k = _In(key)
        n = c_uint64()
        st = _lib.dfkv_exist(self._handle(), k.ptr, k.len, byref(n))
        return st, n.value

    def remove(self, key):
        k = _In(key)
        return _lib.dfkv_remove(self._handle(), k.ptr, k.len)

    def touch(self, keys, reverse=False):
        """Mark keys used (SPEC 6): forward walk (the last key ends most
        recent; sliding windows), or with reverse=True last to first (the
        first key, the shared prefix, ends most recent; full attention).
        Returns the status."""
        _, p, ln = _spans(keys)
        return _lib.dfkv_touch_walk(self._handle(), p, ln, len(keys),
                                    TOUCH_REVERSE if reverse else 0)

    # ---------------------------------------------------- async batches

    def _submit(self, op, keys, buffer_lists=None, out=False, ttl_ms=0,
                flags=0):
        n = len(keys)
        ins, kp, kl = _spans(keys)
        d = _BatchDesc()
        d.size = ctypes.sizeof(_BatchDesc)
        d.op, d.n, d.keys, d.key_lens = op, n, kp, kl
        d.ttl_ms, d.flags = ttl_ms, flags
        keep = [ins, kp, kl]
        if buffer_lists is not None:
            if len(buffer_lists) != n:
                raise DfkvError(ERRORS["E_INVAL"], "one buffer list per key")
            lists = [_iovs(b, out) for b in buffer_lists]
            iv = (_IOVP * max(n, 1))(*[ctypes.cast(a, _IOVP) for _, a, _ in
                                       lists])
            cnt = (c_size_t * max(n, 1))(*[c for _, _, c in lists])
            d.iovs, d.iovcnts = iv, cnt
            keep.append(lists)
        h = c_void_p()
        _check(_lib.dfkv_submit(self._handle(), byref(d), byref(h)),
               "submit")
        b = Batch(self, h.value, op, n, keep)
        self._live[h.value] = b
        return b

    def submit_put(self, keys, buffer_lists):
        """Queue PUTs of keys[i] = the concatenation of buffer_lists[i] (a
        buffer or a list of buffers); a Batch.  Never blocks."""
        return self._submit(_OP_PUT, keys, buffer_lists)

    def submit_get(self, keys, buffer_lists):
        """Queue whole-value GETs of keys[i] into the writable
        buffer_lists[i] (a buffer or a list: scattered in order)."""
        return self._submit(_OP_GET, keys, buffer_lists, out=True)

    def submit_exist(self, keys):
        return self._submit(_OP_EXIST, keys)

    def submit_probe(self, keys):
        """Queue a PROBE; results: the number of leading present keys."""
        return self._submit(_OP_PROBE, keys)

    def submit_lease(self, keys, ttl_ms=0):
        """Queue a LEASE; results: a Lease as lease() returns."""
        return self._submit(_OP_LEASE, keys, ttl_ms=ttl_ms)

    def submit_touch(self, keys, reverse=False):
        """Queue a TOUCH walk (see touch()); results: the status."""
        return self._submit(_OP_TOUCH, keys,
                            flags=TOUCH_REVERSE if reverse else 0)

    def fileno(self):
        """The eventfd that is readable while completed batches wait to
        be reaped (select/poll, asyncio's loop.add_reader)."""
        fd = _lib.dfkv_batch_fd(self._handle())
        if fd < 0:
            raise DfkvError(fd, "fileno")
        return fd

    def _reap_c(self):
        """Every batch completed since the last reap, collected and let
        go of in C; the futures of run() waiting for them are resolved."""
        out = (c_void_p * 64)()
        got = []
        while True:
            k = _lib.dfkv_reap(self._handle(), out, 64)
            if k < 0:
                raise DfkvError(k, "reap")
            for h in out[:k]:
                b = self._live.pop(h)
                b._collect()
                b._free()
                got.append(b)
                for fut in self._waiters.pop(id(b), ()):
                    if not fut.done():
                        fut.set_result(b)
            if k < 64:
                return got

    def reap(self):
        """The batches completed since the last reap, each once; never
        blocks."""
        got = self._unclaimed + self._reap_c()
        self._unclaimed = []
        return got

    def _on_readable(self):
        for b in self._reap_c():
            self._unclaimed.append(b)

    def _drop_reader(self):
        """Take fileno() off the loop run() registered it with."""
        if self._reader is not None and not self._reader.is_closed():
            self._reader.remove_reader(self._fd)
        self._reader = None

    async def run(self, batch):
        """Await a batch from an asyncio loop (loop.add_reader on
        fileno(); any number of batches may be awaited at once); the
        batch, done.  Batches reaped meanwhile that nobody awaits are
        handed out by the next reap()."""
        if batch._status is not None:
            if batch in self._unclaimed:    # reaped for another run()
                self._unclaimed.remove(batch)
            return batch
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        self._waiters.setdefault(id(batch), []).append(fut)
        if self._reader is not loop:
            self._drop_reader()
            self._fd = self.fileno()
            loop.add_reader(self._fd, self._on_readable)
            self._reader = loop
        try:
            if batch.done:      # completed before the reader was there
                self._on_readable()
            await fut
        finally:
            ws = self._waiters.get(id(batch))
            if ws and fut in ws:
                ws.remove(fut)
                if not ws:
                    del self._waiters[id(batch)]
            if not self._waiters:
                self._drop_reader()
        # the batch was reaped for run(): it is not also unclaimed
        if batch in self._unclaimed:
            self._unclaimed.remove(batch)
        return batch

    def probe(self, keys):
        """(status, [stored length or 0 per key])."""
        _, p, ln = _spans(keys)
        out = (c_uint64 * max(len(keys), 1))()
        st = _lib.dfkv_probe(self._handle(), p, ln, len(keys), out)
        return st, list(out)[:len(keys)]

    def lease(self, keys, ttl_ms=0):
        """A Lease (hits, stored_lens) pinning the leading present keys."""
        _, p, ln = _spans(keys)
        out = (c_uint64 * max(len(keys), 1))()
        hits, h = c_size_t(), c_void_p()
        st = _lib.dfkv_lease(self._handle(), p, ln, len(keys), ttl_ms, out,
                             byref(hits), byref(h))
        _check(st, "lease")
        return Lease(self, h, hits.value, list(out)[:hits.value])

    def _release(self, h):
        return _lib.dfkv_release(self._handle(), h)

    def put_batch(self, keys, values):
        """[status per item]."""
        n = len(keys)
        _, kp, kl = _spans(keys)
        _, vp, vl = _spans(values)
        st = (c_int * max(n, 1))()
        rc = _lib.dfkv_put_batch(self._handle(), n, kp, kl, vp, vl, st)
        if rc < 0:
            raise DfkvError(rc, "put_batch")
        return list(st)[:n]

    def get_batch(self, keys, outs):
        """[(status, length)] with values landing in the writable outs."""
        n = len(keys)
        _, kp, kl = _spans(keys)
        os_ = [_Out(o) for o in outs]
        bp = (c_void_p * max(n, 1))(*[o.ptr for o in os_])
        caps = (c_uint64 * max(n, 1))(*[o.len for o in os_])
        lens = (c_uint64 * max(n, 1))()
        st = (c_int * max(n, 1))()
        rc = _lib.dfkv_get_batch(self._handle(), n, kp, kl, bp, caps, lens,
                                 st)
        if rc < 0:
            raise DfkvError(rc, "get_batch")
        return list(zip(list(st)[:n], list(lens)[:n]))

    def exist_batch(self, keys):
        n = len(keys)
        _, kp, kl = _spans(keys)
        lens = (c_uint64 * max(n, 1))()
        st = (c_int * max(n, 1))()
        rc = _lib.dfkv_exist_batch(self._handle(), n, kp, kl, lens, st)
        if rc < 0:
            raise DfkvError(rc, "exist_batch")
        return list(zip(list(st)[:n], list(lens)[:n]))

    def remove_batch(self, keys):
        n = len(keys)
        _, kp, kl = _spans(keys)
        st = (c_int * max(n, 1))()
        rc = _lib.dfkv_remove_batch(self._handle(), n, kp, kl, st)
        if rc < 0:
            raise DfkvError(rc, "remove_batch")
        return list(st)[:n]

    def locate(self, key):
        """(member name, tenant hash, object id) of key."""
        k = _In(key)
        name, bk = c_char_p(), _BlockKey()
        _check(_lib.dfkv_locate(self._handle(), k.ptr, k.len, byref(name),
                                byref(bk)), "locate")
        return name.value.decode(), bk.tenant, bytes(bk.id)

    def stats(self):
        """The client's counters, Prometheus text."""
        n = c_uint64()
        rc = _lib.dfkv_stats_snapshot(self._handle(), None, 0, byref(n))
        if rc not in (OK, E_RANGE):
            _check(rc, "stats")
        buf = ctypes.create_string_buffer(n.value + 1024)
        _check(_lib.dfkv_stats_snapshot(self._handle(), buf, len(buf),
                                        byref(n)), "stats")
        return buf.raw[:n.value].decode()
