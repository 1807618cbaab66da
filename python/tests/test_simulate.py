"""eiffel.simulate: the same report as `eiffel sim --json`."""

import json
import os
import shutil
import subprocess

import pytest

import eiffel

QFQ = "examples/scenarios/qfq-delay.toml"
FANIN = "examples/scenarios/pfabric-fanin.toml"


def _cli(*args):
    exe = os.environ.get("EIFFEL_BIN") or shutil.which("eiffel")
    if exe is None:
        pytest.skip("no eiffel binary: set EIFFEL_BIN (scripts/test-python.sh does)")
    out = subprocess.run([str(exe), "sim", *args, "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def test_same_report_as_the_cli():
    py = eiffel.simulate(QFQ, quick=True)
    assert py == _cli(QFQ, "--quick")
    assert py["schemes"] == ["drr", "qfq", "wf2q+"]
    assert {d["traffic"] for d in py["delays"]} == {"f0", "f1"}
    for d in py["delays"]:
        assert d["packets"] > 0 and d["mean_delay_ms"] > 20.0, "two 10 ms router links at least"


def test_selection_mirrors_the_cli_options():
    py = eiffel.simulate(FANIN, quick=True, schemes=["pfabric-2MB"], loads=[0.5], seeds=[3], jobs=1)
    cli = _cli(FANIN, "--quick", "--scheme", "pfabric-2MB", "--loads", "0.5", "--seeds", "3")
    assert py == cli
    assert py["schemes"] == ["pfabric-2MB"] and py["loads"] == [0.5] and py["seeds"] == [3]
    [run] = py["runs"]
    assert run["completed"] == run["finite"] > 0
    assert eiffel.simulate(FANIN, quick=True, schemes=["pfabric-2MB"], loads=[0.5], seeds=[3], jobs=2) == py


def test_errors_name_the_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\n\n[topology]\nkind = "dumbbell"\n')
    with pytest.raises(eiffel.EiffelError, match=r"bad.toml:4:8: key `topology.access_link`: a `dumbbell` topology needs"):
        eiffel.simulate(bad)
    with pytest.raises(eiffel.EiffelError, match="nothing.toml: No such file"):
        eiffel.simulate(tmp_path / "nothing.toml")
    with pytest.raises(eiffel.EiffelError, match="scheme fifo: the scenario's schemes are drr, qfq, wf2q\\+"):
        eiffel.simulate(QFQ, quick=True, schemes=["fifo"])
    with pytest.raises(eiffel.EiffelError, match=r"load 0 is outside \(0, 2\]"):
        eiffel.simulate(QFQ, quick=True, loads=[0.0])
    with pytest.raises(eiffel.EiffelError, match="give at least one seed"):
        eiffel.simulate(QFQ, quick=True, seeds=[])
    with pytest.raises(eiffel.EiffelError, match="the sweep needs about .* above the limit of 1 B"):
        eiffel.simulate(QFQ, quick=True, max_memory=1)
    with pytest.raises(ValueError, match="max_memory"):
        eiffel.simulate(QFQ, max_memory="lots")


def test_dataframes():
    pd = pytest.importorskip("pandas")
    r = eiffel.simulate(FANIN, quick=True, schemes=["pfabric-36KB", "pfabric-2MB"], loads=[0.5])
    d = eiffel.to_dataframes(r)
    assert set(d) == {"results", "coflows", "delays", "long_lived", "runs", "ports", "queues"}
    assert isinstance(d["results"], pd.DataFrame) and len(d["results"]) == len(r["results"]) > 0
    assert set(d["runs"]["scheme"]) == {"pfabric-36KB", "pfabric-2MB"}
    assert d["delays"].empty
    drops = [c for c in d["ports"].columns if c.startswith("drops.")]
    assert sum(d["ports"][drops].fillna(0).sum()) == sum(c for p in r["ports"] for _, c in p["drop_reasons"])
