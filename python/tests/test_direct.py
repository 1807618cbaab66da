"""Policy trees, flow schedulers and queues used directly."""

import heapq
import random

import pytest

import eiffel

STRICT = """
[[node]]
name = "root"
discipline = "strict"
limit = "8Mbit"
[[node]]
name = "hi"
parent = "root"
priority = 0
capacity = 4
[[node]]
name = "lo"
parent = "root"
priority = 1
[classify]
default = "lo"
[[classify.rule]]
leaf = "hi"
protocol = "udp"
"""


def test_policy_tree_priority_limits_and_counters():
    s = eiffel.Scheduler.from_toml(STRICT, "strict.toml")
    hi, lo = s.leaf("hi"), s.leaf("lo")
    with pytest.raises(eiffel.EiffelError, match="no leaf named `mid`"):
        s.leaf("mid")
    dropped = []
    for i in range(6):
        d = s.enqueue(eiffel.Packet(1000, leaf=lo, buffer=i), now=0)
        assert d is None
    for i in range(6, 12):
        d = s.enqueue(eiffel.Packet(1000, leaf=hi, buffer=i), now=0)
        if d is not None:
            dropped.append(d)
    assert [(p.buffer, why) for p, why in dropped] == [(10, "leaf_full"), (11, "leaf_full")]
    assert len(s) == 10
    now, order = 0, []
    while len(s):
        p = s.dequeue(now)
        if p is None:
            now = s.next_ready(now)
            assert now is not None
            continue
        order.append(p.buffer)
        now += p.length * 8 * 1000  # at 8 Mbit/s the shaper paces 1 ms per packet
    assert order == [6, 7, 8, 9, 0, 1, 2, 3, 4, 5]
    assert now >= 9_000_000, "paced by the root's limit"
    c = s.counters()
    assert (c["enqueued"], c["dequeued"], c["dropped"], c["queued"]) == (12, 10, 2, 0)
    assert c["drops"] == {"leaf_full": 2}
    nodes = {n["path"]: n for n in s.nodes()}
    assert nodes["root/hi"]["dropped"] == 2 and nodes["root/lo"]["dequeued"] == 6


def test_an_rte_shaped_policy_runs_on_the_pipe_executor(examples):
    s = eiffel.Scheduler(examples / "policies" / "hqos.toml")
    assert s.executor == "pipe-tree"
    assert eiffel.Scheduler.from_toml(STRICT).executor == "policy-tree"
    leaves = [n["path"].rsplit("/", 1)[1] for n in s.nodes() if n["leaf"]]
    assert len(leaves) == 64
    rng = random.Random(3)
    sent = 0
    for step in range(200):
        now = step * 100_000
        for _ in range(8):
            leaf = s.leaf(rng.choice(leaves))
            assert s.enqueue(eiffel.Packet(rng.randint(64, 1500), leaf=leaf), now) is None
        while s.dequeue(now) is not None:
            sent += 1
    nodes = {n["path"]: n for n in s.nodes()}
    assert nodes["port"]["discipline"] == "drr" and nodes["port/subport/a"]["discipline"] == "ets"
    assert nodes["port/subport/a/a-tc0"]["discipline"] == "fifo"
    assert nodes["port"]["dequeued"] == sent == s.counters()["dequeued"]
    assert nodes["port"]["queued"] == len(s) == 1600 - sent
    assert sum(nodes[f"port/subport/{p}"]["dequeued"] for p in "abcd") == sent


def test_classify_by_the_rules():
    s = eiffel.Scheduler.from_toml(STRICT)
    udp = b"\x02" * 12 + b"\x08\x00" + bytes([0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]) + bytes(8)
    p = s.classify(udp, 5)
    assert p is not None and p.leaf == s.leaf("hi") and p.arrival == 5 and p.length == len(udp)
    junk = s.classify(b"\x00" * 5, 6)
    assert junk is not None and junk.leaf == s.leaf("lo"), "malformed frames go to the default leaf"


@pytest.mark.parametrize("kind", ["qfq", "drr", "wf2q+", "stfq"])
def test_flow_schedulers_share_by_weight(kind):
    f = eiffel.FlowScheduler(kind, flows=2, capacity=4096)
    assert f.kind == kind
    f.add_flow(0, weight=3)
    f.add_flow(1, weight=1)
    for i in range(2000):
        assert f.enqueue(eiffel.Packet(1000, flow=i % 2, buffer=i), 0) is None
    sent = [0, 0]
    for _ in range(800):
        sent[f.dequeue(0).flow] += 1
    assert abs(sent[0] / sent[1] - 3) < 0.1, sent
    assert f.flow_backlog(0) == (1000 - sent[0], (1000 - sent[0]) * 1000)
    assert f.counters()["dequeued"] == 800
    with pytest.raises(ValueError, match="unknown flow scheduler"):
        eiffel.FlowScheduler("fifo", 2)


@pytest.mark.parametrize("kind", ["ffs", "hffs", "gradient", "bucket_heap", "binary_heap"])
def test_queues_against_heapq(kind):
    rng = random.Random(1)
    buckets = 64 if kind == "ffs" else 4096
    q = eiffel.Queue(kind, buckets=buckets, capacity=512)
    ref = []
    handles = {}
    for i in range(3000):
        if rng.random() < 0.55 and len(q) < 512:
            rank = rng.randrange(buckets)
            h = q.push(rank, ("item", i))
            handles[i] = h
            heapq.heappush(ref, (rank, i))
        elif ref:
            rank, item = q.pop()
            want_rank, _ = heapq.heappop(ref)
            assert rank == want_rank
            assert item[0] == "item"
    assert len(q) == len(ref)
    if ref:
        assert q.peek()[0] == ref[0][0]


def test_queue_handles_and_errors():
    q = eiffel.Queue("cffs", buckets=64, capacity=2, reject=True)
    a = q.push(5, "a")
    q.push(9, "b")
    with pytest.raises(eiffel.EiffelError, match="full"):
        q.push(1, "c")
    q.set_rank(a, 20)
    assert q.pop() == (9, "b")
    assert q.remove(a) == (20, "a")
    with pytest.raises(KeyError):
        q.remove(a)
    with pytest.raises(ValueError, match="queue kind"):
        eiffel.Queue("fibonacci")
