"""Type hints of Eiffel's native module."""

from typing import Any, Dict, List, Optional, Tuple, Union

class EiffelError(Exception):
    """A policy, workload, capture or scenario that cannot be used."""

def run_json(
    policy: Optional[str] = None,
    workload: Optional[str] = None,
    pcap: Optional[str] = None,
    duration: Optional[Union[int, str]] = None,
    link_rate: Optional[Union[int, str]] = None,
    seed: Optional[int] = None,
) -> str: ...
def simulate_json(
    scenario: str,
    quick: bool = False,
    schemes: Optional[List[str]] = None,
    loads: Optional[List[float]] = None,
    seeds: Optional[List[int]] = None,
    jobs: int = 0,
    max_memory: Optional[Union[int, str]] = None,
    check: bool = False,
) -> str:
    """A network scenario's sweep as ``eiffel sim --json`` prints it."""
def check(policy: str) -> str:
    """Validate a policy file; the compiled tree as ``eiffel check`` prints it."""

class Packet:
    """A packet descriptor: schedulers order these, never payload bytes."""

    buffer: int
    length: int
    flow: int
    leaf: int
    arrival: int
    rank: int
    deadline: Optional[int]
    remaining: int
    def __init__(
        self,
        length: int,
        flow: int = 0,
        leaf: int = 0,
        arrival: int = 0,
        rank: int = 0,
        deadline: Optional[int] = None,
        remaining: int = 0,
        buffer: int = 0,
    ) -> None: ...

Dropped = Tuple[Packet, str]

class Scheduler:
    """A policy file's tree and classifier, driven with explicit times (ns)."""

    def __init__(self, policy: str) -> None: ...
    @staticmethod
    def from_toml(text: str, name: str = "<string>") -> "Scheduler": ...
    @property
    def name(self) -> str: ...
    @property
    def executor(self) -> str:
        """``"pipe-tree"`` when the tree has the pipe executor's shape, else ``"policy-tree"``."""
    def leaf(self, name: str) -> int: ...
    def enqueue(self, packet: Packet, now: int) -> Optional[Dropped]:
        """``None`` if queued, else ``(packet dropped, reason)``."""
    def classify(self, frame: bytes, now: int) -> Optional[Packet]: ...
    def dequeue(self, now: int) -> Optional[Packet]: ...
    def next_ready(self, now: int) -> Optional[int]: ...
    def counters(self) -> Dict[str, Any]: ...
    def nodes(self) -> List[Dict[str, Any]]: ...
    def __len__(self) -> int: ...

class FlowScheduler:
    """QFQ, DRR, WF2Q+ or STFQ over flow ids ``0..flows``."""

    def __init__(self, kind: str, flows: int, capacity: int = 65536) -> None: ...
    @property
    def kind(self) -> str: ...
    def add_flow(
        self,
        flow: int,
        weight: int = 1,
        max_packet: int = 1500,
        quantum: Optional[int] = None,
        limit: Optional[int] = None,
    ) -> None: ...
    def enqueue(self, packet: Packet, now: int) -> Optional[Dropped]: ...
    def dequeue(self, now: int) -> Optional[Packet]: ...
    def flow_backlog(self, flow: int) -> Tuple[int, int]: ...
    def counters(self) -> Dict[str, Any]: ...
    def __len__(self) -> int: ...

class Queue:
    """A bucketed integer priority queue of objects."""

    def __init__(
        self,
        kind: str = "cffs",
        buckets: int = 1024,
        capacity: int = 1024,
        granularity: int = 1,
        base: int = 0,
        reject: bool = False,
    ) -> None: ...
    @property
    def kind(self) -> str: ...
    @property
    def capacity(self) -> int: ...
    def push(self, rank: int, item: Any) -> int: ...
    def pop(self) -> Optional[Tuple[int, Any]]: ...
    def peek(self) -> Optional[Tuple[int, Any]]: ...
    def remove(self, handle: int) -> Tuple[int, Any]: ...
    def set_rank(self, handle: int, rank: int) -> None: ...
    def __len__(self) -> int: ...
