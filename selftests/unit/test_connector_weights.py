#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The weights settings every engine connector requires
(common.weights_of: `quantization` and `lora`, Documentation/connectors.md),
without the engines: what they put in the namespace's model_revision
field, that a missing or malformed one is refused naming its key, and
that what the engine tells (its quantization, whether it serves LoRA,
a quantized checkpoint's config.json) must agree.  Prints TAP."""

import json
import os
import sys
import tempfile

from unittap import run, test

from dfkv.connectors import common

PLAIN = {"quantization": "none", "lora": "none"}


def weights(model="org/m", revision="r1", engine_quant=None,
            engine_lora=None, **settings):
    return common.weights_of(dict(PLAIN, **settings), model, revision,
                             engine_quant, engine_lora)


def refused(**kw):
    try:
        weights(**kw)
    except common.ConfigError as e:
        return str(e)
    raise AssertionError("accepted %s" % kw)


@test("none and none keep the revision; each setting changes it")
def revision_field():
    assert weights().revision("r1") == "r1"
    q = weights(quantization="fp8").revision("r1")
    a = weights(lora="sql@r1,chat@c1").revision("r1")
    b = weights(lora="chat@c1,sql@r1").revision("r1")
    c = weights(lora="chat@c1,sql@r2").revision("r1")
    both = weights(quantization="fp8", lora="sql@r1").revision("r1")
    assert q == "r1+quant=fp8", q
    assert a == b == "r1+lora=chat@c1,sql@r1", (a, b)
    assert len({"r1", q, a, c, both}) == 5


@test("a missing or malformed setting is refused, naming its key")
def refusals():
    for key in common.WEIGHTS_KEYS:
        for value in (None, ""):
            msg = refused(**{key: value})
            assert "set '%s'" % key in msg, msg
    assert "'lora' entry 'sql'" in refused(lora="sql")
    assert "'lora' entry" in refused(lora="sql@")
    assert "twice" in refused(lora="sql@r1,sql@r2")
    assert "no method name" in refused(quantization="fp 8")


@test("what the engine tells must agree with the settings")
def engine_agrees():
    assert weights(quantization="awq", engine_quant="awq").quantization \
        == "awq"
    assert "differs from the engine's 'fp8'" in refused(engine_quant="fp8")
    assert "serves LoRA" in refused(engine_lora=True)
    assert "serves no LoRA" in refused(engine_lora=False, lora="sql@r1")
    assert weights(engine_lora=True, lora="sql@r1").lora == (("sql", "r1"),)
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump({"quantization_config": {"quant_method": "gptq"}}, f)
        msg = refused(model=d)
        assert "'quantization'" in msg and "gptq" in msg, msg
        assert weights(model=d, quantization="gptq").quantization == "gptq"


sys.exit(run())
