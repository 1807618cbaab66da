"""eiffel.run: the same report as `eiffel run --json`."""

import json
import os
import pathlib
import shutil
import struct
import subprocess

import pytest

import eiffel

from conftest import ROOT


def test_run_has_the_cli_fields(examples):
    r = eiffel.run(examples / "policies/wfq.toml", duration="200ms", link_rate="1Gbit")
    assert set(r) >= {"totals", "nodes", "flows", "series", "policy", "link_rate_bps", "duration_ns"}
    t = r["totals"]
    assert t["enqueued"] == t["dequeued"] + t["dropped"] + t["queued"]
    assert t["dequeued"] > 0
    assert r["duration_ns"] == 200_000_000
    assert r["link_rate_bps"] == 1_000_000_000
    for n in r["nodes"]:
        assert n["enqueued"] == n["dequeued"] + n["dropped"] + n["queued"], n["path"]
        assert {"path", "throughput_bps", "share_of_parent", "p99_latency_ns", "drops"} <= set(n)
    for f in r["flows"]:
        assert {"name", "throughput_bps", "p50_latency_ns", "dropped", "fct"} <= set(f)


def test_same_numbers_as_the_cli(examples):
    exe = os.environ.get("EIFFEL_BIN") or shutil.which("eiffel")
    if exe is None:
        pytest.skip("no eiffel binary: set EIFFEL_BIN (scripts/test-python.sh does)")
    policy = examples / "policies/strict.toml"
    cli = json.loads(
        subprocess.run(
            [str(exe), "run", str(policy), "--json", "--duration", "300ms"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    py = eiffel.run(policy, duration=300_000_000)
    assert py["totals"] == cli["totals"]
    assert [n["dequeued"] for n in py["nodes"]] == [n["dequeued"] for n in cli["nodes"]]


def test_built_in_demo_and_seed():
    a = eiffel.run(None, duration="1s", seed=7)
    b = eiffel.run(None, duration="1s", seed=7)
    assert a == b
    assert a["policy"].startswith("examples/policies/fig6.toml")


def test_errors_name_the_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[[node]]\nname = "root"\nlimit = 7000000\n')
    with pytest.raises(eiffel.EiffelError, match=r"bad.toml:3:\d+: key `node\[0\].limit`"):
        eiffel.run(bad, workload=ROOT / "examples/workloads/wfq.toml")
    lonely = tmp_path / "lonely.toml"
    lonely.write_text('[[node]]\nname = "root"\n')
    with pytest.raises(eiffel.EiffelError, match="no workload for"):
        eiffel.run(lonely)
    with pytest.raises(eiffel.EiffelError, match="nothing.toml: No such file"):
        eiffel.run(tmp_path / "nothing.toml")
    with pytest.raises(ValueError, match="duration"):
        eiffel.run(None, duration="5 parsecs")
    with pytest.raises(ValueError, match="must be positive"):
        eiffel.run(None, link_rate=0)


def _udp_frame(dst_port: int, payload: int) -> bytes:
    ip_len = 20 + 8 + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, ip_len, 0, 0, 64, 17, 0, bytes([10, 1, 0, 1]), bytes([10, 9, 9, 9]))
    udp = struct.pack("!HHHH", 4000, dst_port, 8 + payload, 0)
    return b"\x02\x00\x00\x00\x00\x02" + b"\x02\x00\x00\x00\x00\x01" + b"\x08\x00" + ip + udp + bytes(payload)


def _pcap(path: pathlib.Path, frames):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1))
        for t, data in frames:
            f.write(struct.pack("<IIII", t // 1_000_000_000, t % 1_000_000_000, len(data), len(data)))
            f.write(data)


def test_run_on_a_capture(tmp_path, examples):
    frames = [(1_000_000_000 + i * 100_000, _udp_frame(5001, 1000)) for i in range(500)]
    cap = tmp_path / "in.pcap"
    _pcap(cap, frames)
    r = eiffel.run(examples / "policies/live-uplink.toml", pcap=cap)
    assert r["capture"]["frames"] == 500
    assert r["totals"]["enqueued"] == 500
    assert r["totals"]["dequeued"] == 500, "80 Mbit/s through a 100 Mbit/s root"
    [flow] = r["flows"]
    assert flow["name"] == "root/tenants/tenant_a" and flow["count"] == 1
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(cap.read_bytes()[:-10])
    with pytest.raises(eiffel.EiffelError, match=r"truncated capture: the packet record at byte \d+"):
        eiffel.run(examples / "policies/live-uplink.toml", pcap=cut)


def test_check_describes_the_tree(examples):
    text = eiffel.check(str(examples / "policies/hclock.toml"))
    assert "hclock" in text


def test_dataframes(examples):
    pd = pytest.importorskip("pandas")
    r = eiffel.run(examples / "policies/wfq.toml", duration="100ms")
    d = eiffel.to_dataframes(r)
    assert isinstance(d["nodes"], pd.DataFrame)
    assert list(d["nodes"].index) == [n["path"] for n in r["nodes"]]
    assert d["series"].shape[1] == len(r["series"])
    assert int(d["totals"]["dequeued"][0]) == r["totals"]["dequeued"]
