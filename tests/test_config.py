from __future__ import annotations

import pytest

from vecgrid.config import ConfigError, Settings


def test_layers_defaults_file_env_flags(tmp_path):
    path = tmp_path / "vecgrid.toml"
    path.write_text('[querycoord]\nport = 1000\n[common]\ndata_dir = "/from/file"\n[dask]\nworkers = 3\n')
    env = {"VECGRID_QUERYCOORD_PORT": "2000", "VECGRID_COMMON_LOG_LEVEL": "debug", "OTHER": "x"}
    s = Settings.load(str(path), env=env, overrides={"querycoord.port": 3000, "http.port": None})
    assert s.querycoord.port == 3000          # flag beats env beats file
    assert s.common.log_level == "debug"      # env
    assert s.common.data_dir == "/from/file"  # file
    assert s.dask.workers == 3
    assert s.http.port == 19121               # default: a None flag does not override
    assert Settings.load(str(path), env=env).querycoord.port == 2000


def test_bad_values_are_clear_errors(tmp_path):
    with pytest.raises(ConfigError, match="querycoord.port must be a int"):
        Settings.load(env={"VECGRID_QUERYCOORD_PORT": "abc"})
    with pytest.raises(ConfigError, match="unknown setting 'querynode.nope'"):
        Settings.load(overrides={"querynode.nope": 1}, env={})
    with pytest.raises(ConfigError, match="unknown section"):
        Settings().set("nosection.x", 1)


def test_config_items_and_pattern():
    s = Settings.load(env={})
    keys = [k for k, _ in s.config_items("querynode")]
    assert keys == sorted(keys) and all(k.startswith(("common.", "querynode.")) for k in keys)
    assert s.matching("querycoord", "PORT") == [("querycoord.port", "19531")]


def test_with_env_copies():
    s = Settings.load(env={})
    t = s.with_env({"VECGRID_QUERYNODE_PORT": "0"})
    assert t.querynode.port == 0 and s.querynode.port == 21123
