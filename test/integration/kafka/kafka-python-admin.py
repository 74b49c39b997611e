"""kafka-python's KafkaAdminClient (2.0.2) against cohort's Kafka door.

Usage: kafka-python-admin.py BOOTSTRAP TOPIC LIVE_GROUP EMPTY_GROUP. Run by
test/integration/kafka-admin-clients.test.ts, which has put one member in LIVE_GROUP and committed offsets
for EMPTY_GROUP (no members). Prints one JSON object a line, each naming its step: create_topics (twice:
the second is refused), list_consumer_groups, describe_consumer_groups, list_consumer_group_offsets,
delete_consumer_groups (the live group is refused), list_consumer_groups again.
"""
import json
import sys

from kafka import KafkaAdminClient
from kafka.admin import NewTopic
from kafka.errors import KafkaError

bootstrap, topic, live_group, empty_group = sys.argv[1:5]


def emit(step, **fields):
    print(json.dumps(dict(step=step, **fields)), flush=True)


admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id='kpy-admin')
for attempt in range(2):
    try:
        admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)], timeout_ms=10000)
        emit('create_topics', error=0)
    except KafkaError as error:
        emit('create_topics', error=error.errno)

emit('list_consumer_groups', groups=sorted(list(g) for g in admin.list_consumer_groups()))
for group in admin.describe_consumer_groups([live_group, empty_group]):
    emit('describe_consumer_groups', group=group.group, error=group.error_code, state=group.state,
         protocol_type=group.protocol_type, protocol=group.protocol,
         members=[m.client_id for m in group.members])
offsets = admin.list_consumer_group_offsets(empty_group)
emit('list_consumer_group_offsets',
     offsets=sorted([tp.topic, tp.partition, o.offset] for tp, o in offsets.items()))
emit('delete_consumer_groups',
     results=sorted([group, error.errno] for group, error in admin.delete_consumer_groups([live_group, empty_group])))
emit('list_consumer_groups', groups=sorted(g[0] for g in admin.list_consumer_groups()))
admin.close()
