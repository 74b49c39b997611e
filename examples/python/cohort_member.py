"""A member of a cohort consumer group, in Python: joins, heartbeats, commits and leaves.

docs/clients.md explains the calls it makes and why, in the order it makes them. It speaks Kafka's
consumer protocol (the `range` assignor, subscriptions and assignments encoded as the TypeScript SDK
encodes them), so it can share a group with SDK consumers that offer `range`.

From the repository root, with Debian's python3-grpcio and python3-grpc-tools:

    mkdir -p examples/python/generated
    python3 -m grpc_tools.protoc -I proto --python_out=examples/python/generated \\
        --grpc_python_out=examples/python/generated proto/cohort/v1/*.proto
    PYTHONPATH=examples/python/generated python3 examples/python/cohort_member.py \\
        --group jobs --topic jobs --partitions 6

It prints one line per event. For each partition it is assigned, it reads the committed offset, "processes"
one record (the offset moves on by one) and commits. SIGTERM or Ctrl-C makes it leave the group and exit 0.
test/integration/python-member.test.ts runs two of them against a real server.
"""

import argparse
import signal
import struct
import sys
import threading

import grpc

from cohort.v1 import errors_pb2 as errors
from cohort.v1 import group_coordinator_pb2 as pb
from cohort.v1 import group_coordinator_pb2_grpc as rpc

# The codes after which the member simply tries again (after a pause): Kafka's retriable ones.
RETRIABLE = {
    errors.COORDINATOR_LOAD_IN_PROGRESS,
    errors.COORDINATOR_NOT_AVAILABLE,
    errors.NOT_COORDINATOR,
    errors.REQUEST_TIMED_OUT,
}
RETRY_BACKOFF_S = 0.1
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


class GroupMember:
    """One member of a group: join → sync → heartbeat, until stopped; then leave."""

    def __init__(self, stub, group_id, topics, partitions_per_topic, args, say):
        self.stub, self.group_id, self.topics = stub, group_id, topics
        self.partitions_per_topic = partitions_per_topic
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
                self.process()
                return
            if code == errors.UNKNOWN_MEMBER_ID:
                self.member_id = ""
            elif code in RETRIABLE:
                self.stopping.wait(RETRY_BACKOFF_S)
            elif code not in (errors.REBALANCE_IN_PROGRESS, errors.ILLEGAL_GENERATION):
                raise CohortError("SyncGroup", code)
            # REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION, no answer: join (again) with the same member id.

    # region offsets
    def process(self):
        """Reads the committed offsets of the assignment, 'processes' one record of each, commits."""
        if not self.assignment:
            return
        by_topic = {}
        for topic, partition in self.assignment:
            by_topic.setdefault(topic, []).append(partition)
        fetched = call(
            self.stub.OffsetFetch,
            pb.OffsetFetchRequest(
                group_id=self.group_id,
                topics=[pb.OffsetFetchTopic(name=t, partition_indexes=ps) for t, ps in by_topic.items()],
            ),
            10,
        )
        if fetched is None or fetched.error_code != errors.NONE:
            # Without its positions the member processes nothing in this generation.
            self.say(f"offset fetch failed: {'no answer' if fetched is None else code_name(fetched.error_code)}")
            return
        # -1: nothing committed yet. An offset is the next record to consume, as in Kafka.
        positions = {
            (t.name, p.partition_index): max(p.committed_offset, 0)
            for t in fetched.topics
            for p in t.partitions
        }
        committed = call(
            self.stub.OffsetCommit,
            pb.OffsetCommitRequest(
                group_id=self.group_id,
                generation_id=self.generation_id,  # fenced: a member that lost its partitions is refused
                member_id=self.member_id,
                topics=[
                    pb.OffsetCommitTopic(
                        name=t,
                        partitions=[
                            pb.OffsetCommitPartition(partition_index=p, committed_offset=positions[(t, p)] + 1)
                            for p in ps
                        ],
                    )
                    for t, ps in by_topic.items()
                ],
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
        offsets = " ".join(f"{t}-{p}={positions[(t, p)] + 1}" for t, p in sorted(self.assignment))
        self.say(f"committed in generation {self.generation_id}: {offsets}")
    # endregion offsets

    # region heartbeat
    def run(self):
        self.rebalance()
        while not self.stopping.wait(self.heartbeat_interval_s):
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
                # An orderly rebalance: our offsets are committed (process() did), so give up and rejoin.
                self.say("rebalance: rejoining")
            elif code in (errors.UNKNOWN_MEMBER_ID, errors.ILLEGAL_GENERATION):
                # The session expired or a newer generation exists: the partitions are lost, not handed
                # over. Stop work on them without committing; rejoin (as a new member if unknown).
                self.say(f"lost the assignment: {code_name(code)}")
                if code == errors.UNKNOWN_MEMBER_ID:
                    self.member_id = ""
            else:
                raise CohortError("Heartbeat", code)
            self.assignment = []
            self.rebalance()
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
    parser = argparse.ArgumentParser(description="A member of a cohort consumer group.")
    parser.add_argument("--address", default="127.0.0.1:7070")
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--partitions", type=int, required=True, help="the topic's partition count")
    parser.add_argument("--client-id", default="python-member")
    parser.add_argument("--session-timeout-ms", type=int, default=10_000)
    parser.add_argument("--rebalance-timeout-ms", type=int, default=30_000)
    parser.add_argument("--heartbeat-interval-ms", type=int, default=3_000)
    parser.add_argument("--name", default="member", help="prefixed to every line printed")
    parser.add_argument("--verbose", action="store_true", help="print every heartbeat too")
    args = parser.parse_args()

    def say(line):
        print(f"{args.name}: {line}", flush=True)

    with grpc.insecure_channel(args.address) as channel:
        member = GroupMember(
            rpc.GroupCoordinatorStub(channel),
            args.group,
            [args.topic],
            {args.topic: args.partitions},
            args,
            say,
        )
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: member.stopping.set())
        member.run()


if __name__ == "__main__":
    sys.exit(main())
