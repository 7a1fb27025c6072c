"""JSON on the wire of the REST transport: what results and bodies become (base.encode_json/decode_json).

Non-finite floats answer ``null``, as ``JSON.stringify`` in a Feathers server does (JSON has no NaN);
numpy arrays and scalars are encoded as lists and numbers; integers keep every digit both ways.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from tornado.testing import AsyncHTTPTestCase

from vecgrid.http.feathers.application import Application
from vecgrid.http.base import decode_json, encode_json
from vecgrid.http.feathers.rest import make_tornado_app


class Values:
    """``get(name)`` answers the value of that name; ``create`` answers its body with Python types."""

    VALUES = {
        "nan": {"score": math.nan, "inf": math.inf, "ninf": -math.inf, "ok": 1.5},
        "numpy": {"vector": np.array([0.5, 1.0], dtype=np.float32), "ids": np.array([[1, 2], [3, 4]]),
                  "count": np.int64(7), "distance": np.float32(0.25), "strings": np.array(["a", "b"])},
        "keys": {1: "one", None: "none"},
        "huge": {"big": 2 ** 70, "small": -(2 ** 63) - 1},
        "text": {"text": "żółw ✓ \u2028"},
    }

    async def get(self, id, params):
        return self.VALUES[id]

    async def create(self, data, params):
        return {"data": data, "types": {k: type(v).__name__ for k, v in data.items()}}


@pytest.mark.parametrize("value, expected", [
    ({"a": [1, 2.5, "x", None, True]}, {"a": [1, 2.5, "x", None, True]}),
    ({"nan": math.nan, "l": [math.inf]}, {"nan": None, "l": [None]}),
    ({"big": 2 ** 70, "nan": math.nan}, {"big": 2 ** 70, "nan": None}),  # the slow path keeps both rules
    ({"v": np.array([1.5, np.nan])}, {"v": [1.5, None]}),
    ({"s": np.array(["a"]), "n": np.float64("nan")}, {"s": ["a"], "n": None}),
])
def test_encode_json(value, expected):
    encoded = encode_json(value)
    assert isinstance(encoded, bytes) and b"NaN" not in encoded and b"Infinity" not in encoded
    assert json.loads(encoded) == expected


def test_encode_json_is_compact_utf8():
    assert encode_json({"a": [1, "é"]}) == '{"a":[1,"é"]}'.encode()


def test_encode_json_refuses_what_is_not_json():
    with pytest.raises(TypeError):
        encode_json({"x": object()})


@pytest.mark.parametrize("raw, expected", [
    (b'{"a": [1, 2.5, null]}', {"a": [1, 2.5, None]}),
    (b'{"big": 123456789012345678901234567890}', {"big": 123456789012345678901234567890}),
    (b'[-9223372036854775809, 18446744073709551616]', [-9223372036854775809, 18446744073709551616]),
])
def test_decode_json(raw, expected):
    decoded = decode_json(raw)
    assert decoded == expected
    assert [type(v) for v in (decoded.values() if isinstance(decoded, dict) else decoded)] == \
        [type(v) for v in (expected.values() if isinstance(expected, dict) else expected)]


@pytest.mark.parametrize("raw", [b"NaN", b'{"a": Infinity}', b'{"a": -Infinity}', b"[1e400]",
                                 b'{"a": 1, "big": 1234567890123456789012, "x": NaN}', b"{", b""])
def test_decode_json_refuses_what_json_cannot_say(raw):
    with pytest.raises(ValueError):
        decode_json(raw)


class FeathersJsonTest(AsyncHTTPTestCase):
    def get_app(self):
        app = Application()
        app.use("values", Values())
        return make_tornado_app(app)

    def get_json(self, path):
        response = self.fetch(path, raise_error=False)
        return response.code, json.loads(response.body)

    def test_non_finite_floats_answer_null(self):
        code, body = self.get_json("/values/nan")
        assert code == 200
        assert body == {"score": None, "inf": None, "ninf": None, "ok": 1.5}

    def test_numpy_results_are_lists_and_numbers(self):
        code, body = self.get_json("/values/numpy")
        assert code == 200
        assert body == {"vector": [0.5, 1.0], "ids": [[1, 2], [3, 4]], "count": 7, "distance": 0.25,
                        "strings": ["a", "b"]}

    def test_keys_and_integers_as_the_standard_library_writes_them(self):
        assert self.get_json("/values/keys") == (200, {"1": "one", "null": "none"})
        assert self.get_json("/values/huge") == (200, {"big": 2 ** 70, "small": -(2 ** 63) - 1})
        response = self.fetch("/values/text")
        assert response.body == '{"text":"żółw ✓ \u2028"}'.encode()

    def test_bodies_keep_big_integers_and_refuse_nan(self):
        response = self.fetch("/values", method="POST", body=b'{"big": 123456789012345678901234567890, "f": 1.0}',
                              headers={"Content-Type": "application/json"})
        assert response.code == 201
        assert json.loads(response.body) == {"data": {"big": 123456789012345678901234567890, "f": 1.0},
                                             "types": {"big": "int", "f": "float"}}
        response = self.fetch("/values", method="POST", body=b'{"x": NaN}', raise_error=False,
                              headers={"Content-Type": "application/json"})
        assert response.code == 400
        body = json.loads(response.body)
        assert body["name"] == "BadRequest" and body["message"].startswith("Invalid JSON body")


def test_a_refused_literal_is_named():
    import pytest
    from vecgrid.http.base import decode_json
    for literal in ("NaN", "Infinity", "-Infinity"):
        with pytest.raises(ValueError, match=f"^{literal} is not JSON"):
            decode_json(f'{{"v": [1, {literal}]}}'.encode())


def test_long_fractions_take_the_fast_decoder_and_long_integers_keep_every_digit(monkeypatch):
    """Float vectors as JavaScript and Python write them (17 significant digits, so 0.000123… has a
    run of 20 digits after the point) are read by orjson: the standard library's decoder, for integers
    beyond 64 bits only, took ~10x as long over a 100 x 128 query body.  Integers of 19 digits or more
    still keep every digit, wherever they are."""
    import json as stdlib_json

    from vecgrid.http import base

    body = b'{"vectors": [[0.00012345678901234567, -1.2345678901234567e-05, 12345678901234567890.5]]}'
    calls = []
    real_loads = stdlib_json.loads
    monkeypatch.setattr(base.json, "loads", lambda *a, **kw: calls.append(a) or real_loads(*a, **kw))
    assert decode_json(body) == {"vectors": [[0.00012345678901234567, -1.2345678901234567e-05,
                                              12345678901234567890.5]]}
    assert not calls, "a float's long run of digits sent the body to the slow decoder"
    for raw, value in [(b'[0.5, 1234567890123456789012]', [0.5, 1234567890123456789012]),
                       (b'{"k": -12345678901234567890, "f": 0.00012345678901234567}',
                        {"k": -12345678901234567890, "f": 0.00012345678901234567}),
                       (b'[1.5e3,\n99999999999999999999]', [1.5e3, 99999999999999999999])]:
        decoded = decode_json(raw)
        assert decoded == value and type(decoded) is type(value)
        ints = [v for v in (decoded.values() if isinstance(decoded, dict) else decoded) if isinstance(v, int)]
        assert ints and all(type(v) is int for v in ints)
