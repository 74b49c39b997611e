/**
 * Between the Broker's messages as `GrpcTransport` hands them to grpc-js and as the SDK uses them: int64
 * fields travel as decimal strings (`longs: String`), offsets become `bigint`s and timestamps numbers. A
 * string is exact at any size; `BigInt` of it is too, so no offset is ever rounded on its way in.
 */
import type * as b from './broker-messages';

/** An int64 as grpc-js decodes it with `longs: String` (a number when the field came from a default). */
export type Int64 = string | number;

/**
 * A message as grpc-js decodes it: offsets (`bigint` in the SDK) arrive as `Int64`. Timestamps, typed as
 * numbers, arrive as strings too; `ms()` converts whichever it gets.
 */
type Wire<T> = T extends bigint
  ? Int64
  : T extends Buffer
    ? Buffer
    : T extends (infer E)[]
      ? Wire<E>[]
      : T extends object
        ? { [K in keyof T]: Wire<T[K]> }
        : T;

/** A response as decoded: int64 fields are strings. */
export type WireOf<T> = Wire<T>;

function int64(value: Int64): bigint {
  return BigInt(value);
}

function ms(value: Int64 | number): number {
  return Number(value);
}

function record(r: Wire<b.WireRecord>): b.WireRecord {
  return {
    offset: int64(r.offset),
    timestampMs: ms(r.timestampMs),
    key: r.key,
    value: r.value,
    headers: r.headers,
    valueNull: r.valueNull === true,
  };
}

/** A Produce as grpc-js encodes it: offsets of records are ignored by the server, sent as "0". */
export function produceToWire(request: b.ProduceRequest): object {
  return {
    acks: request.acks,
    timeoutMs: request.timeoutMs,
    topics: request.topics.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((p) => ({
        partitionIndex: p.partitionIndex,
        records: p.records.map((r) => ({
          offset: r.offset.toString(),
          timestampMs: r.timestampMs,
          key: r.key,
          value: r.value,
          headers: r.headers,
          valueNull: r.valueNull === true,
        })),
      })),
    })),
  };
}

/** A Fetch as grpc-js encodes it. */
export function fetchToWire(request: b.FetchRequest): object {
  return {
    replicaId: request.replicaId,
    maxWaitMs: request.maxWaitMs,
    minBytes: request.minBytes,
    maxBytes: request.maxBytes,
    topics: request.topics.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((p) => ({
        partitionIndex: p.partitionIndex,
        fetchOffset: p.fetchOffset.toString(),
        partitionMaxBytes: p.partitionMaxBytes,
        // The leader epoch the client believes current (KIP-320): a stale one is FENCED_LEADER_EPOCH.
        ...(p.currentLeaderEpoch !== undefined ? { currentLeaderEpoch: p.currentLeaderEpoch } : {}),
      })),
    })),
  };
}

export function produceFromWire(wire: Wire<b.ProduceResponse>): b.ProduceResponse {
  return {
    topics: wire.topics.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((p) => ({
        partitionIndex: p.partitionIndex,
        errorCode: p.errorCode,
        baseOffset: int64(p.baseOffset),
        logAppendTimeMs: ms(p.logAppendTimeMs),
        logStartOffset: int64(p.logStartOffset),
      })),
    })),
  };
}

export function fetchFromWire(wire: Wire<b.FetchResponse>): b.FetchResponse {
  return {
    errorCode: wire.errorCode,
    responses: wire.responses.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((p) => ({
        partitionIndex: p.partitionIndex,
        errorCode: p.errorCode,
        highWatermark: int64(p.highWatermark),
        logStartOffset: int64(p.logStartOffset),
        records: p.records.map(record),
      })),
    })),
  };
}

export function listOffsetsFromWire(wire: Wire<b.ListOffsetsResponse>): b.ListOffsetsResponse {
  return {
    topics: wire.topics.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((p) => ({
        partitionIndex: p.partitionIndex,
        errorCode: p.errorCode,
        offset: int64(p.offset),
        timestamp: ms(p.timestamp),
      })),
    })),
  };
}
