"""confluent-kafka (librdkafka) against cohort's Kafka listener: produce, then read in a consumer group.

docs/kafka-clients.md shows its two regions. With Debian's python3-confluent-kafka, against `npm start`:

    python3 examples/python/confluent_kafka_client.py 127.0.0.1:9092

It creates the topic `orders` with two partitions, produces three records (one with a header, one with a
null value, a tombstone) compressed with lz4, reads them back in the group `billing`, committing after
each, and prints "partition offset key value" per record. test/integration/kafka-confluent.test.ts runs it
against a test server.
"""
import sys

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

bootstrap = sys.argv[1] if len(sys.argv) > 1 else '127.0.0.1:9092'

# region produce
admin = AdminClient({'bootstrap.servers': bootstrap})
for future in admin.create_topics([NewTopic('orders', num_partitions=2, replication_factor=1)]).values():
    future.result()  # raises if the topic could not be created (TOPIC_ALREADY_EXISTS on a second run)

producer = Producer({'bootstrap.servers': bootstrap, 'acks': 'all', 'compression.codec': 'lz4'})
producer.produce('orders', key=b'order-1', value=b'paid', partition=0, headers=[('source', b'shop')])
producer.produce('orders', key=b'order-2', value=b'paid', partition=1)
producer.produce('orders', key=b'order-1', value=None, partition=0)  # a tombstone: the value is null
producer.flush(10)
# endregion produce

# region consume
consumer = Consumer({
    'bootstrap.servers': bootstrap,
    'group.id': 'billing',
    'auto.offset.reset': 'earliest',
    'enable.auto.commit': False,
})
consumer.subscribe(['orders'])
read = 0
while read < 3:
    message = consumer.poll(1.0)
    if message is None or message.error() is not None:
        continue
    print(message.partition(), message.offset(), message.key().decode(), message.value())
    consumer.commit(message, asynchronous=False)  # the offset after this record
    read += 1
consumer.close()  # leaves the group at once (LeaveGroup)
# endregion consume
