"""Eiffel packet scheduling from Python.

Run a scheduling policy (a TOML policy file) on a workload file or a packet
capture over an emulated link and get the same report as ``eiffel run --json``;
run a network scenario (topology, traffic, schemes) packet by packet and get
the same report as ``eiffel sim --json``; or drive Eiffel's policy trees, fair-queueing schedulers and bucketed integer
priority queues directly from your own simulator.

>>> import eiffel
>>> r = eiffel.run("examples/policies/wfq.toml", duration="100ms")  # doctest: +SKIP
>>> r["totals"]["dequeued"] > 0                                    # doctest: +SKIP
True
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Optional, Sequence, Union

from ._eiffel import (
    EiffelError,
    FlowScheduler,
    Packet,
    Queue,
    Scheduler,
    check,
    run_json as _run_json,
    simulate_json as _simulate_json,
)

__all__ = [
    "EiffelError",
    "FlowScheduler",
    "Packet",
    "Queue",
    "Scheduler",
    "check",
    "run",
    "simulate",
    "to_dataframes",
]

__version__ = "0.1.0"

PathLike = Union[str, "os.PathLike[str]"]
Quantity = Union[int, str]


def _path(p: Optional[PathLike]) -> Optional[str]:
    return None if p is None else os.fspath(p)


def run(
    policy: Optional[PathLike],
    workload: Optional[PathLike] = None,
    pcap: Optional[PathLike] = None,
    duration: Optional[Quantity] = None,
    link_rate: Optional[Quantity] = None,
    seed: Optional[int] = None,
) -> Dict[str, Any]:
    """Run ``policy`` on a workload or a packet capture over an emulated link.

    The run is ``eiffel run``'s, in virtual time, and the result has the fields
    of ``eiffel run --json``: ``totals`` (``enqueued = dequeued + dropped +
    queued``), ``nodes`` (one dict per node: ``path``, ``throughput_bps``,
    ``share_of_parent``, latencies, ``drops`` by reason...), ``flows`` (one per
    flow group, or per leaf for a capture), ``series`` (rates over time per
    leaf) and the run's settings. A capture's run also has ``capture`` (what the
    classifier saw).

    Args:
        policy: the policy file; ``None`` runs the built-in Eiffel Fig. 6 demo.
        workload: the workload file; by default ``../workloads/<name>.toml``
            next to the policy, as ``eiffel run`` finds it.
        pcap: a pcap or pcapng capture (Ethernet) to replay instead of a
            workload: capture times are arrivals, the policy's rules classify.
        duration: simulated time, ns or a string such as ``"500ms"`` (default:
            the workload's; for a capture its span plus the time to send it).
        link_rate: bits per second or a string such as ``"10Gbit"`` (default:
            the workload's; for a capture the root's limit).
        seed: the workload generator's seed (default: the workload's).

    Raises:
        EiffelError: a policy, workload or capture that cannot be used; the
            message names the file (and line and key, or byte offset).
        ValueError: a quantity without a valid unit.
    """
    text = _run_json(
        _path(policy),
        workload=_path(workload),
        pcap=_path(pcap),
        duration=duration,
        link_rate=link_rate,
        seed=seed,
    )
    return json.loads(text)


def simulate(
    scenario: PathLike,
    quick: bool = False,
    schemes: Optional[Sequence[str]] = None,
    loads: Optional[Sequence[float]] = None,
    seeds: Optional[Sequence[int]] = None,
    jobs: int = 0,
    max_memory: Optional[Quantity] = None,
    check: bool = False,
) -> Dict[str, Any]:
    """Run a network scenario packet by packet, swept over schemes, loads and seeds.

    The sweep is ``eiffel sim``'s (the same engine, in parallel, deterministic
    for a seed whatever the number of threads), and the result has the fields
    of ``eiffel sim --json``: ``scenario``, ``title``, ``schemes``, ``loads``,
    ``seeds``, ``results`` (flow completion times and slowdowns by scheme,
    load, traffic and size class), ``coflows``, ``delays`` (observed flows),
    ``long_lived`` (goodput and Jain's index), ``runs`` (per-run counters:
    events, drops, ECN marks, timeouts...), ``ports`` (the busiest ports),
    ``queues`` (sampled occupancy) and ``panels`` (the scenario's figures).

    Args:
        scenario: the scenario file (see ``examples/scenarios/``).
        quick: apply the scenario's ``[quick]`` section (``--quick``).
        schemes: only these schemes, by name (``--scheme``).
        loads: only these loads, fractions of host link capacity in (0, 2]
            (``--loads``).
        seeds: these seeds instead of the scenario's (``--seeds``).
        jobs: runs in parallel; 0 is one per core (``--jobs``).
        max_memory: refuse a sweep estimated to need more, bytes or a string
            such as ``"8GiB"`` (default: 80% of the available memory).
        check: verify every packet balance at every port after each run.

    Raises:
        EiffelError: a scenario (or a policy it names) that cannot be used, with
            the file, line and key; an unknown scheme, a load outside (0, 2];
            a sweep above ``max_memory``, with the estimate.
        ValueError: ``max_memory`` without a valid unit.
    """
    text = _simulate_json(
        os.fspath(scenario),
        quick=quick,
        schemes=None if schemes is None else list(schemes),
        loads=None if loads is None else [float(x) for x in loads],
        seeds=None if seeds is None else list(seeds),
        jobs=jobs,
        max_memory=max_memory,
        check=check,
    )
    return json.loads(text)


_SIM_TABLES = ("results", "coflows", "delays", "long_lived", "runs", "ports", "queues")


def _sim_dataframes(pd: Any, report: Dict[str, Any]) -> Dict[str, Any]:
    out = {}
    for name in _SIM_TABLES:
        rows = report.get(name, [])
        if name == "ports":
            rows = [
                {**{k: v for k, v in r.items() if k != "drop_reasons"}, "drops": dict(r["drop_reasons"])}
                for r in rows
            ]
        out[name] = pd.json_normalize(rows) if rows else pd.DataFrame()
    return out


def to_dataframes(report: Dict[str, Any]) -> Dict[str, Any]:
    """The tables of a :func:`run` or :func:`simulate` report as pandas DataFrames.

    For a :func:`run` report, a dict with ``nodes`` (indexed by path),
    ``flows`` (by name), ``series`` (rates over time: one column per leaf,
    indexed by the bin's start in seconds) and ``totals`` (a one-row frame).
    Drops by reason become ``drops.<reason>`` columns and flow completion times
    ``fct.<field>``.

    For a :func:`simulate` report, a dict with one frame per table:
    ``results``, ``coflows``, ``delays``, ``long_lived``, ``runs``, ``ports``
    (drops by reason as ``drops.<reason>`` columns) and ``queues``, each row
    keyed by its ``scheme``, ``load`` (and ``seed``) columns; an empty table is
    an empty frame.

    Raises:
        ImportError: pandas is not installed (``pip install pandas``).
    """
    try:
        import pandas as pd
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("eiffel.to_dataframes needs pandas: pip install pandas") from e
    if "results" in report and "runs" in report:
        return _sim_dataframes(pd, report)
    nodes = pd.json_normalize(report["nodes"]).set_index("path")
    flows = pd.json_normalize(report["flows"]).set_index("name")
    bin_s = report["bin_ns"] / 1e9
    series = pd.DataFrame({s["path"]: s["rates_bps"] for s in report["series"]})
    series.index = [i * bin_s for i in range(len(series))]
    series.index.name = "time_s"
    totals = pd.DataFrame([report["totals"]])
    return {"nodes": nodes, "flows": flows, "series": series, "totals": totals}
