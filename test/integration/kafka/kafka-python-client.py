"""Produces three records with kafka-python, then reads them back in a consumer group and commits.

Usage: kafka-python-client.py BOOTSTRAP TOPIC GROUP. Prints one line per record read:
"partition offset key value header=value". Run by test/integration/kafka-clients.test.ts.
"""
import sys

from kafka import KafkaConsumer, KafkaProducer

bootstrap, topic, group = sys.argv[1:4]

producer = KafkaProducer(bootstrap_servers=bootstrap, client_id='kpy-test', acks=1)
for i in range(3):
    producer.send(topic, key=b'k%d' % i, value=b'v%d' % i, headers=[('h', b'x%d' % i)]).get(timeout=20)
producer.close()

consumer = KafkaConsumer(
    topic,
    bootstrap_servers=bootstrap,
    client_id='kpy-test',
    group_id=group,
    auto_offset_reset='earliest',
    enable_auto_commit=False,
    consumer_timeout_ms=15000,
    session_timeout_ms=6000,
    heartbeat_interval_ms=500,
    fetch_max_wait_ms=100,
)
read = 0
for message in consumer:
    headers = ' '.join('%s=%s' % (k, v.decode()) for k, v in message.headers)
    print(message.partition, message.offset, message.key.decode(), message.value.decode(), headers, flush=True)
    read += 1
    if read == 3:
        break
consumer.commit()
consumer.close()
sys.exit(0 if read == 3 else 1)
