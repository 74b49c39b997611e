"""One consumer-group member on a Python Kafka client, driven by test/support/kafka-member-process.ts.

Usage: kafka-member.py CLIENT BOOTSTRAP TOPIC GROUP CLIENT_ID SESSION_TIMEOUT_MS ASSIGNOR
CLIENT is confluent-kafka (librdkafka) or kafka-python; ASSIGNOR is range or roundrobin.

It subscribes to TOPIC in GROUP (offsets from the earliest, no automatic commits) and prints one JSON
object a line on stdout:
  {"assigned": [partitions]}       after each rebalance (eager protocol: the whole new assignment)
  {"record": {...}}                each record read: partition, offset, key, value (null stays null)
  {"error": code}                  a Kafka error code the client reported
  {"committed": true}              after a "commit" command: every record read so far is committed
  {"left": true}                   after a "leave" command: the member left the group (LeaveGroup)
Commands arrive as lines on stdin: "commit", "leave". The end of stdin is a "leave" too, so a member
whose test runner went away leaves and exits instead of lingering.
"""
import json
import queue
import sys
import threading

client, bootstrap, topic, group, client_id, session_timeout_ms, assignor = sys.argv[1:8]
session_timeout_ms = int(session_timeout_ms)
HEARTBEAT_INTERVAL_MS = 300


def emit(event):
    sys.stdout.write(json.dumps(event) + '\n')
    sys.stdout.flush()


def text(data):
    return None if data is None else data.decode('utf-8', 'replace')


commands = queue.Queue()


def read_commands():
    for line in sys.stdin:
        commands.put(line.strip())
    commands.put('leave')


threading.Thread(target=read_commands, daemon=True).start()


def next_command():
    try:
        return commands.get_nowait()
    except queue.Empty:
        return None


def run_confluent_kafka():
    from confluent_kafka import Consumer, KafkaError

    def on_error(error):
        emit({'error': error.code()})

    consumer = Consumer({
        'bootstrap.servers': bootstrap,
        'client.id': client_id,
        'group.id': group,
        'session.timeout.ms': session_timeout_ms,
        'heartbeat.interval.ms': HEARTBEAT_INTERVAL_MS,
        'partition.assignment.strategy': assignor,
        'fetch.wait.max.ms': 100,
        'auto.offset.reset': 'earliest',
        'enable.auto.commit': False,
        'error_cb': on_error,
    })
    consumer.subscribe(
        [topic],
        on_assign=lambda _, partitions: emit({'assigned': sorted(p.partition for p in partitions)}),
    )
    while True:
        command = next_command()
        if command == 'commit':
            try:
                consumer.commit(asynchronous=False)
            except Exception as error:  # nothing consumed yet: librdkafka says _NO_OFFSET
                if error.args[0].code() != KafkaError._NO_OFFSET:
                    raise
            emit({'committed': True})
        elif command == 'leave':
            consumer.close()
            emit({'left': True})
            return
        message = consumer.poll(0.05)
        if message is None:
            continue
        if message.error() is not None:
            emit({'error': message.error().code()})
            continue
        emit({'record': {
            'partition': message.partition(),
            'offset': message.offset(),
            'key': text(message.key()),
            'value': text(message.value()),
        }})


def run_kafka_python():
    from kafka import ConsumerRebalanceListener, KafkaConsumer
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            pass

        def on_partitions_assigned(self, assigned):
            emit({'assigned': sorted(tp.partition for tp in assigned)})

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        client_id=client_id,
        group_id=group,
        session_timeout_ms=session_timeout_ms,
        heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
        partition_assignment_strategy=(
            RangePartitionAssignor if assignor == 'range' else RoundRobinPartitionAssignor,
        ),
        fetch_max_wait_ms=100,
        auto_offset_reset='earliest',
        enable_auto_commit=False,
    )
    consumer.subscribe([topic], listener=Listener())
    while True:
        command = next_command()
        if command == 'commit':
            consumer.commit()
            emit({'committed': True})
        elif command == 'leave':
            consumer.close()
            emit({'left': True})
            return
        for messages in consumer.poll(timeout_ms=50).values():
            for message in messages:
                emit({'record': {
                    'partition': message.partition,
                    'offset': message.offset,
                    'key': text(message.key),
                    'value': text(message.value),
                }})


if client == 'confluent-kafka':
    run_confluent_kafka()
elif client == 'kafka-python':
    run_kafka_python()
else:
    sys.exit('unknown client %r' % client)
