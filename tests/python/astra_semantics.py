"""A small, independent reader and interpreter of Chakra ET files with ASTRA-sim 2.x semantics.

Used by tests/python/test_astra_export.py to check what `clustertwin export --format chakra`
writes against the rules ASTRA-sim applies when it replays a trace, since ASTRA-sim itself is not
installed here. Nothing in it comes from ClusterTwin's C++ importer: the protobuf wire format is
decoded by hand (varint-length-prefixed messages, field numbers of mlcommons/chakra
schema/protobuf/et_def.proto) and the execution rules are those of astra-sim/astra-sim
(astra-sim/workload/Workload.cc, HardwareResource.cc, system/Sys.cc @ 518bd51, 2026-03):

* A rank issues its dependency-free nodes (data and control dependencies both) in ascending node
  id whenever any node finishes, each only if its resource is free.
* Resources per GPU: one compute node in flight, one communication in flight (sends, collectives,
  and the instantaneous invalid/metadata nodes); receives take no resource.
* A compute node lasts duration_micros (0 counts as 1 ns); invalid and metadata nodes finish at
  once. A send lasts the time the cost function gives and delivers its message when it ends; a
  receive finishes when the matching (src, dst, tag) message has arrived (it may arrive first).
* A collective of communicator pg_name (comm_group.json) starts when every member has issued the
  k-th collective of that communicator and ends after the cost function's duration.
* Sys::determine_chunk_size: a collective of comm_size bytes is cut into
  preferred-dataset-splits chunks of floor(size / splits) bytes, so a size that is not a
  multiple of the splits gets one more chunk (`astra_chunks`).
"""
from __future__ import annotations

import heapq
import json
import math
import os
import re
from dataclasses import dataclass, field

COMP, SEND, RECV, COLL = 4, 5, 6, 7
INVALID, METADATA, MEM_LOAD, MEM_STORE = 0, 1, 2, 3
ALL_REDUCE, ALL_GATHER, ALL_TO_ALL, REDUCE_SCATTER = 0, 2, 6, 7


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    out = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        out |= (b & 0x7F) << shift
        if b < 0x80:
            return out, pos
        shift += 7


def _fields(buf: bytes):
    """(field number, wire type, value) of one message; value: int (varint, fixed) or bytes."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = int.from_bytes(buf[pos:pos + 8], "little"), pos + 8
        elif wire == 5:
            value, pos = int.from_bytes(buf[pos:pos + 4], "little"), pos + 4
        elif wire == 2:
            n, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + n], pos + n
        else:
            raise ValueError(f"wire type {wire} at byte {pos}")
        yield number, wire, value


def _signed64(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def _attribute(buf: bytes):
    import struct

    name, value = "", None
    for number, wire, v in _fields(buf):
        if number == 1:
            name = v.decode()
        elif number == 3:  # double
            value = struct.unpack("<d", v.to_bytes(8, "little"))[0]
        elif number in (7, 9, 11, 13):  # int32, int64, uint32, uint64
            value = _signed64(v) if number in (7, 9) else v
        elif number == 27:
            value = bool(v)
        elif number in (29, 31):
            value = v.decode(errors="replace")
    return name, value


def _packed(wire: int, v) -> list[int]:
    if wire == 0:
        return [v]
    out, pos = [], 0
    while pos < len(v):
        x, pos = _varint(v, pos)
        out.append(x)
    return out


@dataclass
class Node:
    id: int
    name: str = ""
    type: int = INVALID
    ctrl_deps: list = field(default_factory=list)
    data_deps: list = field(default_factory=list)
    duration_micros: int = 0
    attr: dict = field(default_factory=dict)


def read_et(path: str | os.PathLike) -> tuple[dict, list[Node]]:
    """(global metadata {"version": ..., attributes...}, nodes in file order)."""
    data = open(path, "rb").read()
    messages, pos = [], 0
    while pos < len(data):
        n, pos = _varint(data, pos)
        messages.append(data[pos:pos + n])
        pos += n
    meta: dict = {}
    for number, _, v in _fields(messages[0]):
        if number == 1:
            meta["version"] = v.decode()
        elif number == 2:
            k, val = _attribute(v)
            meta[k] = val
    nodes = []
    for m in messages[1:]:
        node = Node(id=0)
        for number, wire, v in _fields(m):
            if number == 1:
                node.id = v
            elif number == 2:
                node.name = v.decode()
            elif number == 3:
                node.type = v
            elif number == 4:
                node.ctrl_deps += _packed(wire, v)
            elif number == 5:
                node.data_deps += _packed(wire, v)
            elif number == 7:
                node.duration_micros = v
            elif number == 10:
                k, val = _attribute(v)
                node.attr[k] = val
        nodes.append(node)
    return meta, nodes


def read_export(directory: str | os.PathLike) -> tuple[dict[int, list[Node]], dict[str, list[int]], dict[int, dict]]:
    """(nodes per rank, comm groups by pg_name, metadata per rank) of an exported directory."""
    ranks, metas = {}, {}
    for f in os.listdir(directory):
        m = re.fullmatch(r".*\.(\d+)\.et", f)
        if m:
            metas[int(m.group(1))], ranks[int(m.group(1))] = read_et(os.path.join(directory, f))
    groups_path = os.path.join(directory, "comm_group.json")
    groups = json.load(open(groups_path)) if os.path.exists(groups_path) else {}
    return ranks, groups, metas


def astra_chunks(comm_size: int, splits: int) -> int:
    """Chunks ASTRA-sim cuts a collective of comm_size bytes into (Sys::generate_collective)."""
    chunk = comm_size // splits
    return math.ceil(comm_size / chunk) if chunk > 0 else 0


class Deadlock(Exception):
    pass


def interpret(ranks: dict[int, list[Node]], groups: dict[str, list[int]], send_seconds, coll_seconds,
              one_comm: bool = True, comp_seconds=None):
    """Runs every rank's graph under ASTRA-sim's rules. send_seconds(rank, node) and
    coll_seconds(pg_name, k, node) give communication durations (k: the collective's index on
    its communicator). one_comm=False lifts the one-communication-per-GPU rule (to measure what
    it costs); comp_seconds(rank, node), when given, replaces duration_micros. Returns ({rank: {node id: (start, end)}}, finish time). Raises Deadlock
    naming the nodes left when no event remains and some node has not run."""
    state = {}
    for r, nodes in ranks.items():
        by_id = {n.id: n for n in nodes}
        waiting = {n.id: set(n.ctrl_deps) | set(n.data_deps) for n in nodes}
        dependents: dict = {}
        for nid, deps in waiting.items():
            deps &= set(by_id)  # a dependency outside the file is ignored, as the feeder does
            for d in deps:
                dependents.setdefault(d, []).append(nid)
        state[r] = {"nodes": by_id, "waiting": waiting, "dependents": dependents, "taken": set(), "done": set(), "comp": False,
                    "comm": False, "coll_seen": {}, "coll_ids": {}, "times": {}}
    events: list = []  # (time, seq, callback)
    seq = [0]
    arrived: dict = {}  # (src, dst, tag) -> [times of delivered messages not yet received]
    posted: dict = {}  # (src, dst, tag) -> [(rank, node id)] receives waiting
    joins: dict = {}  # (pg, k) -> {rank: (issue time, node)}

    def at(t, fn):
        seq[0] += 1
        heapq.heappush(events, (t, seq[0], fn))

    def finish(r, nid, t):
        s = state[r]
        node = s["nodes"][nid]
        s["done"].add(nid)
        s["times"][nid] = (s["times"][nid][0], t)
        if node.type == COMP:
            s["comp"] = False
        elif node.type != RECV:
            s["comm"] = False
        for other in s["dependents"].get(nid, ()):
            s["waiting"][other].discard(nid)
        issue_free(r, t)

    def deliver(key, t):
        if posted.get(key):
            r, nid = posted[key].pop(0)
            finish(r, nid, t)
        else:
            arrived.setdefault(key, []).append(t)

    def issue(r, node, t):
        s = state[r]
        s["taken"].add(node.id)
        s["times"][node.id] = (t, None)
        if node.type == COMP or node.type in (MEM_LOAD, MEM_STORE):
            s["comp"] = node.type == COMP
            d = comp_seconds(r, node) if comp_seconds and node.type == COMP else node.duration_micros * 1e-6
            d = max(d, 1e-9)
            at(t + d, lambda t2, r=r, i=node.id: finish(r, i, t2))
        elif node.type == SEND:
            s["comm"] = True
            d = send_seconds(r, node)
            key = (r, node.attr["comm_dst"], node.attr.get("comm_tag", 0))
            at(t + d, lambda t2, r=r, i=node.id, key=key: (deliver(key, t2), finish(r, i, t2)))
        elif node.type == RECV:
            key = (node.attr["comm_src"], r, node.attr.get("comm_tag", 0))
            if arrived.get(key):
                arrived[key].pop(0)
                at(t, lambda t2, r=r, i=node.id: finish(r, i, t2))
            else:
                posted.setdefault(key, []).append((r, node.id))
        elif node.type == COLL:
            s["comm"] = True
            pg = str(node.attr.get("pg_name", "0"))
            k = s["coll_seen"].get(pg, 0)
            s["coll_seen"][pg] = k + 1
            s["coll_ids"][(pg, k)] = node.id
            members = groups.get(pg, sorted(ranks))
            joined = joins.setdefault((pg, k), {})
            joined[r] = t
            if len(joined) == len(members):
                d = coll_seconds(pg, k, node)
                start = max(joined.values())
                for m in joined:
                    mid = state[m]["coll_ids"][(pg, k)]
                    at(start + d, lambda t2, m=m, i=mid: finish(m, i, t2))
        else:  # invalid / metadata: Workload::skip_invalid, at once
            s["comm"] = True
            at(t, lambda t2, r=r, i=node.id: finish(r, i, t2))

    def issue_free(r, t):
        s = state[r]
        for nid in sorted(i for i, d in s["waiting"].items() if not d and i not in s["taken"]):
            node = s["nodes"][nid]
            if node.type == COMP:
                if s["comp"]:
                    continue
            elif node.type != RECV and s["comm"] and one_comm:
                continue
            issue(r, node, t)

    for r in ranks:
        at(0.0, lambda t, r=r: issue_free(r, t))
    now = 0.0
    while events:
        now, _, fn = heapq.heappop(events)
        fn(now)
    left = {r: sorted(set(s["nodes"]) - s["done"]) for r, s in state.items() if len(s["done"]) < len(s["nodes"])}
    if left:
        r = min(left)
        raise Deadlock(f"{sum(len(v) for v in left.values())} nodes never ran; rank {r} stopped at "
                       f"{[state[r]['nodes'][i].name for i in left[r][:3]]}")
    return {r: s["times"] for r, s in state.items()}, now

