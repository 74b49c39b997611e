import { API_VERSIONS } from './apis/api-versions';
import { CREATE_TOPICS } from './apis/create-topics';
import { DELETE_GROUPS } from './apis/delete-groups';
import { DESCRIBE_GROUPS } from './apis/describe-groups';
import { FETCH } from './apis/fetch';
import { FIND_COORDINATOR } from './apis/find-coordinator';
import { HEARTBEAT } from './apis/heartbeat';
import { JOIN_GROUP } from './apis/join-group';
import { LEAVE_GROUP } from './apis/leave-group';
import { LIST_GROUPS } from './apis/list-groups';
import { LIST_OFFSETS } from './apis/list-offsets';
import { METADATA } from './apis/metadata';
import { OFFSET_COMMIT } from './apis/offset-commit';
import { OFFSET_FETCH } from './apis/offset-fetch';
import { PRODUCE } from './apis/produce';
import { SYNC_GROUP } from './apis/sync-group';
import type { ApiSchema } from './message-schema';

export {
  API_VERSIONS,
  CREATE_TOPICS,
  DELETE_GROUPS,
  DESCRIBE_GROUPS,
  FETCH,
  FIND_COORDINATOR,
  HEARTBEAT,
  JOIN_GROUP,
  LEAVE_GROUP,
  LIST_GROUPS,
  LIST_OFFSETS,
  METADATA,
  OFFSET_COMMIT,
  OFFSET_FETCH,
  PRODUCE,
  SYNC_GROUP,
};

/**
 * Every API the Kafka door serves, by key. ApiVersions advertises exactly these ranges, each implemented
 * whole: a client then never picks a version cohort cannot read (kafka-python infers a broker release
 * from them, so raising one changes what it sends: keep test/unit/kafka's version table in step).
 */
export const KAFKA_APIS: ReadonlyMap<number, ApiSchema> = new Map(
  [
    PRODUCE,
    FETCH,
    LIST_OFFSETS,
    METADATA,
    OFFSET_COMMIT,
    OFFSET_FETCH,
    FIND_COORDINATOR,
    JOIN_GROUP,
    HEARTBEAT,
    LEAVE_GROUP,
    SYNC_GROUP,
    DESCRIBE_GROUPS,
    LIST_GROUPS,
    API_VERSIONS,
    CREATE_TOPICS,
    DELETE_GROUPS,
  ].map((schema) => [schema.apiKey, schema]),
);

export interface ApiVersionRange {
  readonly apiKey: number;
  readonly minVersion: number;
  readonly maxVersion: number;
}

/** ApiVersions' list, in key order. */
export const ADVERTISED_API_VERSIONS: readonly ApiVersionRange[] = Object.freeze(
  [...KAFKA_APIS.values()]
    .map(({ apiKey, minVersion, maxVersion }) => ({ apiKey, minVersion, maxVersion }))
    .sort((a, b) => a.apiKey - b.apiKey),
);
