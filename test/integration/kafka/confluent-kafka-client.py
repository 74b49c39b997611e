"""confluent-kafka (librdkafka 2.0.2) against cohort's Kafka door: admin, producers, a consumer group.

Usage: confluent-kafka-client.py BOOTSTRAP TOPIC GROUP. Run by test/integration/kafka-confluent.test.ts,
which checks what it prints: one JSON object a line, each naming its step.

1. AdminClient.create_topics: TOPIC with three partitions, then again (TOPIC_ALREADY_EXISTS).
2. Three producers, acks 0, 1 and -1 (all), the last compressing with gzip: each writes a keyed record
   with a header, a record with a null value and one with a null key, to partitions 0, 1 and 2.
3. A consumer in GROUP reads the nine records and commits them; while it is in the group,
   AdminClient.list_groups lists and describes the group (ListGroups, DescribeGroups); Consumer.committed
   fetches the committed offsets (OffsetFetch). Then it leaves (LeaveGroup), and the group is Empty.
"""
import json
import sys

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

bootstrap, topic, group = sys.argv[1:4]
CLIENT_ID = 'confluent-test'


def emit(step, **fields):
    print(json.dumps(dict(step=step, **fields)), flush=True)


def text(data):
    return None if data is None else data.decode()


admin = AdminClient({'bootstrap.servers': bootstrap, 'client.id': CLIENT_ID})
for attempt in range(2):
    for name, future in admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)]).items():
        try:
            future.result(timeout=20)
            emit('create_topics', topic=name, error=0)
        except KafkaException as error:
            emit('create_topics', topic=name, error=error.args[0].code())

for acks, compression in (('0', 'none'), ('1', 'none'), ('all', 'gzip')):
    producer = Producer({
        'bootstrap.servers': bootstrap,
        'client.id': CLIENT_ID,
        'acks': acks,
        'compression.codec': compression,
        'linger.ms': 5,
    })
    reports = []
    on_delivery = lambda error, message: reports.append(error)
    producer.produce(topic, key=b'key-' + acks.encode(), value=b'acks=' + acks.encode(), partition=0,
                     headers=[('acks', acks.encode()), ('empty', b'')], on_delivery=on_delivery)
    producer.produce(topic, key=b'null-' + acks.encode(), value=None, partition=1, on_delivery=on_delivery)
    producer.produce(topic, key=None, value=b'no key, acks=' + acks.encode(), partition=2,
                     on_delivery=on_delivery)
    left = producer.flush(20)
    emit('produce', acks=acks, compression=compression, unsent=left, errors=[e is not None for e in reports])

consumer = Consumer({
    'bootstrap.servers': bootstrap,
    'client.id': CLIENT_ID,
    'group.id': group,
    'auto.offset.reset': 'earliest',
    'enable.auto.commit': False,
    'session.timeout.ms': 6000,
    'heartbeat.interval.ms': 300,
    'fetch.wait.max.ms': 100,
})
consumer.subscribe([topic])
records = []
while len(records) < 9:
    message = consumer.poll(1.0)
    if message is None:
        continue
    if message.error() is not None:
        emit('error', code=message.error().code())
        continue
    records.append({
        'partition': message.partition(),
        'offset': message.offset(),
        'key': text(message.key()),
        'value': text(message.value()),
        'headers': [[k, text(v)] for k, v in (message.headers() or [])],
    })
for record in sorted(records, key=lambda r: (r['partition'], r['offset'])):
    emit('record', **record)
consumer.commit(asynchronous=False)

for described in admin.list_groups(group=group, timeout=20):
    emit('describe_group', id=described.id, state=described.state, protocol_type=described.protocol_type,
         protocol=described.protocol, members=[m.client_id for m in described.members])
emit('list_groups', groups=sorted(g.id for g in admin.list_groups(timeout=20)))
committed = consumer.committed([TopicPartition(topic, p) for p in range(3)], timeout=20)
emit('committed', offsets=[tp.offset for tp in committed])
consumer.close()
emit('after_close', states=[g.state for g in admin.list_groups(group=group, timeout=20)])
