"""A consumer in a cohort consumer group, in Python: reads a topic's records, commits, and shares the work.

docs/clients.md explains the calls it makes and why, in the order it makes them: Metadata (creating the
topic if it does not exist), FindCoordinator, JoinGroup and SyncGroup, OffsetFetch, ListOffsets for a
partition with no commit, Fetch long polls, Heartbeat, OffsetCommit and LeaveGroup. It speaks Kafka's
consumer protocol (the `range` assignor, subscriptions and assignments encoded as the TypeScript SDK
encodes them), so it can share a group with SDK consumers that offer `range`.

From the repository root, with the stubs generated into examples/python/generated (docs/clients.md gives
two ways: Debian's packages, or grpcio-tools in a virtual environment):

    python3 examples/python/cohort_member.py --group jobs --topic jobs

It prints one line per event and one per record (`jobs-3@17: <value>`), and commits what it printed after
each batch. SIGTERM or Ctrl-C makes it commit, leave the group and exit 0.
test/integration/python-member.test.ts runs it against a real server.
"""

import argparse
import os
import signal
import struct
import sys
import threading
import time

# The stubs, generated as docs/clients.md says, live in generated/ beside this file: found without
# PYTHONPATH (a PYTHONPATH that has them works too).
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "generated"))

import grpc  # noqa: E402

try:
    from cohort.v1 import broker_pb2 as bpb  # noqa: E402
    from cohort.v1 import broker_pb2_grpc as broker_rpc  # noqa: E402
    from cohort.v1 import errors_pb2 as errors  # noqa: E402
    from cohort.v1 import group_coordinator_pb2 as pb  # noqa: E402
    from cohort.v1 import group_coordinator_pb2_grpc as rpc  # noqa: E402
except ImportError as missing:
    sys.exit(f"{missing}: generate the stubs first (docs/clients.md, \"Python\")")

# The codes after which the member simply tries again (after a pause): Kafka's retriable ones.
RETRIABLE = {
    errors.COORDINATOR_LOAD_IN_PROGRESS,
    errors.COORDINATOR_NOT_AVAILABLE,
    errors.NOT_COORDINATOR,
    errors.REQUEST_TIMED_OUT,
    errors.LEADER_NOT_AVAILABLE,
    errors.NOT_LEADER_OR_FOLLOWER,
}
RETRY_BACKOFF_S = 0.1
EARLIEST = -2  # ListOffsets: the log start offset (-1 would be the latest)
# region call
# A call that got no answer (server down, deadline passed) is as retriable as COORDINATOR_NOT_AVAILABLE.
NO_ANSWER = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED}


def call(method, request, timeout):
    """A unary call; None when it got no answer, for the caller to retry. Other failures raise."""
    try:
        return method(request, timeout=timeout)
    except grpc.RpcError as error:
        if error.code() in NO_ANSWER:
            return None
        raise
# endregion call


def code_name(code):
    return errors.ErrorCode.Name(code)


class CohortError(Exception):
    def __init__(self, call, code):
        super().__init__(f"{call} failed: {code_name(code)}")
        self.code = code


# region consumer-protocol
# Kafka's consumer protocol, version 1 (docs/sdk.md, "The consumer protocol on the wire"): big-endian;
# string = int16 length + UTF-8; bytes = int32 length, -1 for null.
def _string(text):
    data = text.encode("utf-8")
    return struct.pack(">h", len(data)) + data


def encode_subscription(topics):
    """JoinGroup metadata: version, topics, no user data, no owned partitions, generation -1."""
    return (
        struct.pack(">hi", 1, len(topics))
        + b"".join(_string(t) for t in topics)
        + struct.pack(">iii", -1, 0, -1)
    )


def encode_assignment(partitions):
    """A SyncGroup assignment: version, then for each topic its partitions; no user data."""
    by_topic = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    out = struct.pack(">hi", 1, len(by_topic))
    for topic, ps in sorted(by_topic.items()):
        out += _string(topic) + struct.pack(f">i{len(ps)}i", len(ps), *sorted(ps))
    return out + struct.pack(">i", -1)


class _Reader:
    def __init__(self, data):
        self.data, self.at = data, 0

    def take(self, fmt):
        values = struct.unpack_from(fmt, self.data, self.at)
        self.at += struct.calcsize(fmt)
        return values[0] if len(values) == 1 else values

    def string(self):
        length = self.take(">h")
        text = self.data[self.at : self.at + length].decode("utf-8")
        self.at += length
        return text


def decode_subscription_topics(data):
    """The topics of a member's JoinGroup metadata (the leader needs nothing else)."""
    r = _Reader(data)
    r.take(">h")  # version: any ≥ 1; later versions only append fields
    return [r.string() for _ in range(r.take(">i"))]


def decode_assignment(data):
    """[(topic, partition)] of a SyncGroup assignment; empty bytes mean no partitions."""
    if len(data) == 0:
        return []
    r = _Reader(data)
    r.take(">h")
    partitions = []
    for _ in range(r.take(">i")):
        topic = r.string()
        partitions += [(topic, r.take(">i")) for _ in range(r.take(">i"))]
    return partitions
# endregion consumer-protocol


def range_assign(members, partitions_per_topic):
    """Kafka's range assignor: per topic, contiguous runs of partitions, the first members one extra."""
    assignment = {member_id: [] for member_id in members}
    for topic, count in sorted(partitions_per_topic.items()):
        subscribed = sorted(m for m, topics in members.items() if topic in topics)
        if not subscribed:
            continue
        per_member, extra = divmod(count, len(subscribed))
        start = 0
        for i, member_id in enumerate(subscribed):
            n = per_member + (1 if i < extra else 0)
            assignment[member_id] += [(topic, p) for p in range(start, start + n)]
            start += n
    return assignment


# region metadata
def partition_count(broker, topic, partitions_if_created, say):
    """The topic's partition count, from Metadata. A topic that does not exist is created first."""
    while True:
        response = call(broker.Metadata, bpb.MetadataRequest(topics=[topic]), 10)
        found = None if response is None else next((t for t in response.topics if t.name == topic), None)
        code = errors.LEADER_NOT_AVAILABLE if found is None else found.error_code
        if code == errors.NONE:
            return len(found.partitions)
        if code == errors.UNKNOWN_TOPIC_OR_PARTITION:
            created = call(
                broker.CreateTopics,
                bpb.CreateTopicsRequest(
                    topics=[
                        # -1: the server's default replication factor (1 on one node, up to 3 in a cluster)
                        bpb.CreatableTopic(
                            name=topic, num_partitions=partitions_if_created, replication_factor=-1
                        )
                    ]
                ),
                30,
            )
            result = errors.REQUEST_TIMED_OUT if created is None else created.topics[0].error_code
            if result == errors.NONE:
                say(f"created topic {topic}: {partitions_if_created} partitions")
            elif result not in RETRIABLE and result != errors.TOPIC_ALREADY_EXISTS:
                raise CohortError("CreateTopics", result)
        elif code not in RETRIABLE:
            raise CohortError("Metadata", code)
        time.sleep(RETRY_BACKOFF_S)  # then Metadata again: the new topic's partitions, with leaders
# endregion metadata


# region find-coordinator
def find_coordinator(stub, group_id):
    """The group's coordinator as host:port, or None while it has none (COORDINATOR_NOT_AVAILABLE)."""
    response = call(stub.FindCoordinator, pb.FindCoordinatorRequest(key_type=0, keys=[group_id]), 10)
    if response is None or response.coordinators[0].error_code != errors.NONE:
        return None
    found = response.coordinators[0]
    return f"{found.host}:{found.port}"
# endregion find-coordinator


def offset_fetch_topics(partitions):
    by_topic = {}
    for topic, partition in sorted(partitions):
        by_topic.setdefault(topic, []).append(partition)
    return [pb.OffsetFetchTopic(name=t, partition_indexes=ps) for t, ps in by_topic.items()]


class GroupMember:
    """One consumer of a group: join → sync → fetch, heartbeat and commit, until stopped; then leave."""

    def __init__(self, stub, broker, group_id, topics, partitions_per_topic, args, say):
        self.stub, self.broker, self.group_id, self.topics = stub, broker, group_id, topics
        self.partitions_per_topic = partitions_per_topic
        # A Fetch waits on the server up to this for records: short enough for heartbeats in between.
        self.max_wait_ms = min(500, args.heartbeat_interval_ms)
        self.positions = {}  # (topic, partition) -> the offset of the next record to read
        self.committed = {}  # (topic, partition) -> the offset last committed
        self.session_timeout_ms = args.session_timeout_ms
        self.rebalance_timeout_ms = args.rebalance_timeout_ms
        self.heartbeat_interval_s = args.heartbeat_interval_ms / 1000
        self.client_id = args.client_id
        self.verbose = args.verbose
        self.say = say
        self.member_id = ""
        self.generation_id = -1
        self.assignment = []
        self.stopping = threading.Event()

    # region join
    def join(self):
        """JoinGroup until the coordinator answers with a generation. Blocks for the whole rebalance."""
        while True:
            response = call(
                self.stub.JoinGroup,
                pb.JoinGroupRequest(
                    group_id=self.group_id,
                    member_id=self.member_id,
                    session_timeout_ms=self.session_timeout_ms,
                    rebalance_timeout_ms=self.rebalance_timeout_ms,
                    protocol_type="consumer",
                    protocols=[pb.Protocol(name="range", metadata=encode_subscription(self.topics))],
                    client_id=self.client_id,
                ),
                # The server parks the call until every member has rejoined, up to the rebalance timeout.
                (self.rebalance_timeout_ms + 5000) / 1000,
            )
            code = errors.COORDINATOR_NOT_AVAILABLE if response is None else response.error_code
            if code == errors.MEMBER_ID_REQUIRED:  # KIP-394: the first join only hands out the id
                self.member_id = response.member_id
            elif code == errors.UNKNOWN_MEMBER_ID:  # the coordinator forgot us: start over
                self.member_id = ""
            elif code == errors.REBALANCE_IN_PROGRESS:
                pass
            elif code in RETRIABLE:
                self.stopping.wait(RETRY_BACKOFF_S)
            elif code != errors.NONE:
                raise CohortError("JoinGroup", code)
            else:
                self.member_id = response.member_id
                self.generation_id = response.generation_id
                role = "leader" if response.leader_id == response.member_id else "follower"
                self.say(f"joined generation {response.generation_id} as {role}")
                return response
    # endregion join

    # region sync
    def sync(self, joined):
        """SyncGroup: the leader sends everyone's assignment, the others none; each gets its own back.
        None when it got no answer."""
        assignments = []
        if joined.leader_id == self.member_id and not joined.skip_assignment:
            members = {m.member_id: decode_subscription_topics(m.metadata) for m in joined.members}
            assignments = [
                pb.SyncGroupAssignment(member_id=member_id, assignment=encode_assignment(partitions))
                for member_id, partitions in range_assign(members, self.partitions_per_topic).items()
            ]
        return call(
            self.stub.SyncGroup,
            pb.SyncGroupRequest(
                group_id=self.group_id,
                generation_id=joined.generation_id,
                member_id=self.member_id,
                protocol_type="consumer",
                protocol_name=joined.protocol_name,
                assignments=assignments,
            ),
            (self.rebalance_timeout_ms + 5000) / 1000,
        )
    # endregion sync

    def rebalance(self):
        """Join and sync until a generation is complete; then work on what was assigned."""
        while True:
            synced = self.sync(self.join())
            code = errors.COORDINATOR_NOT_AVAILABLE if synced is None else synced.error_code
            if code == errors.NONE:
                self.assignment = decode_assignment(synced.assignment)
                names = " ".join(f"{t}-{p}" for t, p in sorted(self.assignment))
                self.say(f"assigned in generation {self.generation_id}: {names or '(nothing)'}")
                self.positions, self.committed = {}, {}
                self.start_positions()
                return
            if code == errors.UNKNOWN_MEMBER_ID:
                self.member_id = ""
            elif code in RETRIABLE:
                self.stopping.wait(RETRY_BACKOFF_S)
            elif code not in (errors.REBALANCE_IN_PROGRESS, errors.ILLEGAL_GENERATION):
                raise CohortError("SyncGroup", code)
            # REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION, no answer: join (again) with the same member id.

    # region positions
    def start_positions(self):
        """Where to start each assigned partition: its committed offset, else (-1, nothing committed) its
        earliest offset from ListOffsets. Partitions without a position are asked again on the next turn."""
        if not self.assignment:
            return
        fetched = call(
            self.stub.OffsetFetch,
            pb.OffsetFetchRequest(group_id=self.group_id, topics=offset_fetch_topics(self.assignment)),
            10,
        )
        if fetched is None or fetched.error_code != errors.NONE:
            self.say(f"offset fetch failed: {'no answer' if fetched is None else code_name(fetched.error_code)}")
            return
        uncommitted = []
        for t in fetched.topics:
            for p in t.partitions:
                if p.error_code == errors.NONE and p.committed_offset >= 0:
                    self.positions[(t.name, p.partition_index)] = p.committed_offset
                    self.committed[(t.name, p.partition_index)] = p.committed_offset
                else:
                    uncommitted.append((t.name, p.partition_index))
        if uncommitted:
            # No commit: start at the earliest record (Kafka's auto.offset.reset=earliest).
            listed = call(
                self.broker.ListOffsets,
                bpb.ListOffsetsRequest(
                    topics=[
                        bpb.ListOffsetsTopic(
                            name=t, partitions=[bpb.ListOffsetsPartition(partition_index=p, timestamp=EARLIEST)]
                        )
                        for t, p in uncommitted
                    ]
                ),
                10,
            )
            for t in [] if listed is None else listed.topics:
                for p in t.partitions:
                    if p.error_code == errors.NONE:
                        self.positions[(t.name, p.partition_index)] = p.offset
        starts = " ".join(f"{t}-{p}={self.positions[(t, p)]}" for t, p in sorted(self.positions))
        self.say(f"starting at {starts or '(nothing yet)'}")
    # endregion positions

    # region fetch
    def fetch(self):
        """One Fetch long poll for the assigned partitions; prints each record and moves past it."""
        if len(self.positions) < len(self.assignment):
            self.start_positions()
        if not self.positions:
            self.stopping.wait(RETRY_BACKOFF_S)
            return
        by_topic = {}
        for (topic, partition), offset in sorted(self.positions.items()):
            by_topic.setdefault(topic, []).append(bpb.FetchPartition(partition_index=partition, fetch_offset=offset))
        response = call(
            self.broker.Fetch,
            # replica_id, max_bytes and partition_max_bytes left unset: a consumer, with Kafka's default
            # sizes. The server holds the call until a record arrives or max_wait_ms has passed.
            bpb.FetchRequest(
                max_wait_ms=self.max_wait_ms,
                min_bytes=1,
                topics=[bpb.FetchTopic(name=t, partitions=ps) for t, ps in by_topic.items()],
            ),
            self.max_wait_ms / 1000 + 10,
        )
        if response is None or response.error_code != errors.NONE:
            self.stopping.wait(RETRY_BACKOFF_S)
            return
        for t in response.responses:
            for p in t.partitions:
                key = (t.name, p.partition_index)
                if p.error_code == errors.OFFSET_OUT_OF_RANGE:
                    del self.positions[key]  # deleted records, or a truncated log: start again from ListOffsets
                elif p.error_code == errors.NONE and key in self.positions:
                    for record in p.records:
                        if record.offset < self.positions[key]:
                            continue
                        self.say(f"{t.name}-{p.partition_index}@{record.offset}: {record.value.decode('utf-8', 'replace')}")
                        self.positions[key] = record.offset + 1
                # Other codes (NOT_LEADER_OR_FOLLOWER, ...): fetched again on the next turn.
    # endregion fetch

    # region commit
    def commit(self):
        """OffsetCommit of the positions that moved since the last commit; fenced by generation and member."""
        moved = {k: v for k, v in self.positions.items() if self.committed.get(k) != v}
        if not moved:
            return
        by_topic = {}
        for (topic, partition), offset in sorted(moved.items()):
            by_topic.setdefault(topic, []).append(
                pb.OffsetCommitPartition(partition_index=partition, committed_offset=offset)
            )
        committed = call(
            self.stub.OffsetCommit,
            pb.OffsetCommitRequest(
                group_id=self.group_id,
                generation_id=self.generation_id,  # fenced: a member that lost its partitions is refused
                member_id=self.member_id,
                topics=[pb.OffsetCommitTopic(name=t, partitions=ps) for t, ps in by_topic.items()],
            ),
            10,
        )
        if committed is None:
            self.say("commit got no answer")
            return
        codes = {p.error_code for t in committed.topics for p in t.partitions}
        if codes != {errors.NONE}:
            # REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID: the partitions may be someone
            # else's by now; the heartbeat will say what to do.
            self.say(f"commit refused: {', '.join(sorted(code_name(c) for c in codes))}")
            return
        self.committed.update(moved)
        offsets = " ".join(f"{t}-{p}={o}" for (t, p), o in sorted(moved.items()))
        self.say(f"committed in generation {self.generation_id}: {offsets}")
    # endregion commit

    # region heartbeat
    def run(self):
        self.rebalance()
        next_heartbeat = time.monotonic() + self.heartbeat_interval_s
        while not self.stopping.is_set():
            if self.assignment:
                self.fetch()  # returns within max_wait_ms, at most the heartbeat interval
                self.commit()  # what was printed: at least once, as in Kafka
            else:
                self.stopping.wait(self.heartbeat_interval_s)
            if time.monotonic() < next_heartbeat:
                continue
            next_heartbeat = time.monotonic() + self.heartbeat_interval_s
            response = call(
                self.stub.Heartbeat,
                pb.HeartbeatRequest(
                    group_id=self.group_id, generation_id=self.generation_id, member_id=self.member_id
                ),
                self.session_timeout_ms / 1000,
            )
            code = errors.COORDINATOR_NOT_AVAILABLE if response is None else response.error_code
            if self.verbose:
                self.say(f"heartbeat: {'no answer' if response is None else code_name(code)}")
            if code == errors.NONE or code in RETRIABLE:
                continue
            if code == errors.REBALANCE_IN_PROGRESS:
                # An orderly rebalance: commit what was printed, give the partitions up and rejoin.
                self.commit()
                self.say("rebalance: rejoining")
            elif code in (errors.UNKNOWN_MEMBER_ID, errors.ILLEGAL_GENERATION):
                # The session expired or a newer generation exists: the partitions are lost, not handed
                # over. Stop work on them without committing; rejoin (as a new member if unknown).
                self.say(f"lost the assignment: {code_name(code)}")
                if code == errors.UNKNOWN_MEMBER_ID:
                    self.member_id = ""
            else:
                raise CohortError("Heartbeat", code)
            self.assignment, self.positions = [], {}
            self.rebalance()
            next_heartbeat = time.monotonic() + self.heartbeat_interval_s
        self.commit()
        self.leave()
    # endregion heartbeat

    # region leave
    def leave(self):
        """LeaveGroup: the others rebalance at once instead of waiting for our session to time out."""
        if not self.member_id:
            return
        response = call(
            self.stub.LeaveGroup,
            pb.LeaveGroupRequest(
                group_id=self.group_id,
                members=[pb.MemberIdentity(member_id=self.member_id, reason="shutting down")],
            ),
            10,
        )
        # No answer: the session timeout removes the member instead.
        self.say(f"left the group: {'no answer' if response is None else code_name(response.error_code)}")
    # endregion leave


def main():
    parser = argparse.ArgumentParser(description="A consumer in a cohort consumer group.")
    parser.add_argument("--address", default="127.0.0.1:7070")
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument(
        "--partitions", type=int, default=6, help="partitions of the topic if this creates it (default 6)"
    )
    parser.add_argument("--client-id", default="python-member")
    parser.add_argument("--session-timeout-ms", type=int, default=10_000)
    parser.add_argument("--rebalance-timeout-ms", type=int, default=30_000)
    parser.add_argument("--heartbeat-interval-ms", type=int, default=3_000)
    parser.add_argument("--name", default="member", help="prefixed to every line printed")
    parser.add_argument("--verbose", action="store_true", help="print every heartbeat too")
    args = parser.parse_args()

    def say(line):
        print(f"{args.name}: {line}", flush=True)

    stopping = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.set())
    with grpc.insecure_channel(args.address) as channel:
        broker = broker_rpc.BrokerStub(channel)
        partitions = partition_count(broker, args.topic, args.partitions, say)
        # The group's calls go to its coordinator: on one server the server itself.
        coordinator = None
        while coordinator is None and not stopping.is_set():
            coordinator = find_coordinator(rpc.GroupCoordinatorStub(channel), args.group)
            if coordinator is None:
                stopping.wait(RETRY_BACKOFF_S)
        say(f"coordinator: {coordinator}")
        group_channel = channel if coordinator in (None, args.address) else grpc.insecure_channel(coordinator)
        member = GroupMember(
            rpc.GroupCoordinatorStub(group_channel),
            broker,
            args.group,
            [args.topic],
            {args.topic: partitions},
            args,
            say,
        )
        member.stopping = stopping
        if not stopping.is_set():
            member.run()


if __name__ == "__main__":
    sys.exit(main())
