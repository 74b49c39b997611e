import fc from 'fast-check';
import { ADVERTISED_API_VERSIONS, API_VERSIONS, METADATA } from '../../../../src/kafka/protocol/kafka-apis';
import { KafkaProtocolError } from '../../../../src/kafka/protocol/kafka-protocol-error';
import { decodeRequest, encodeResponse } from '../../../../src/kafka/protocol/kafka-request';
import { KafkaWriter } from '../../../../src/kafka/protocol/kafka-writer';

/** ApiVersions v3 as librdkafka writes it: header v2 (client id, empty tags), compact strings, tags. */
function apiVersionsV3Frame(): Buffer {
  return new KafkaWriter()
    .int16(18)
    .int16(3)
    .int32(9)
    .nullableString('rdkafka', false)
    .emptyTaggedFields()
    .nullableString('librdkafka', true)
    .nullableString('2.0.2', true)
    .emptyTaggedFields()
    .toBuffer();
}

describe('Kafka request frames', () => {
  test('ApiVersions v3 is read with request header v2 and compact strings', () => {
    const decoded = decodeRequest(apiVersionsV3Frame());
    expect(decoded).toMatchObject({
      kind: 'request',
      header: { apiKey: 18, apiVersion: 3, correlationId: 9, clientId: 'rdkafka' },
      body: { clientSoftwareName: 'librdkafka', clientSoftwareVersion: '2.0.2' },
    });
  });

  test('the ApiVersions v3 response has header v0, a compact array and tags', () => {
    const frame = encodeResponse(API_VERSIONS, 3, 9, {
      errorCode: 0,
      apiKeys: [{ apiKey: 18, minVersion: 0, maxVersion: 3 }],
    });
    // size, correlation id (no header tags), error 0, array of 1 (+1), key 18 0..3, entry tags, throttle, tags.
    expect([...frame]).toEqual([0, 0, 0, 19, 0, 0, 0, 9, 0, 0, 2, 0, 18, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0]);
  });

  test('an ApiVersions version cohort does not serve is recognised, its body unread', () => {
    const frame = new KafkaWriter()
      .int16(18)
      .int16(9)
      .int32(5)
      .nullableString('new', false)
      .int8(77)
      .toBuffer();
    expect(decodeRequest(frame)).toEqual({
      kind: 'unsupportedApiVersions',
      header: { apiKey: 18, apiVersion: 9, correlationId: 5, clientId: 'new' },
    });
  });

  test('another unknown key or version is unsupported, with its correlation id', () => {
    const unknownKey = new KafkaWriter().int16(22).int16(0).int32(6).nullableString(null, false).toBuffer();
    expect(decodeRequest(unknownKey)).toEqual({
      kind: 'unsupported',
      apiKey: 22,
      apiVersion: 0,
      correlationId: 6,
    });
    const tooNew = new KafkaWriter().int16(3).int16(5).int32(7).nullableString(null, false).toBuffer();
    expect(decodeRequest(tooNew)).toEqual({
      kind: 'unsupported',
      apiKey: 3,
      apiVersion: 5,
      correlationId: 7,
    });
  });

  test('Metadata v1 tells a null topic list (every topic) from an empty one (none)', () => {
    const header = () => new KafkaWriter().int16(3).int16(1).int32(1).nullableString('c', false);
    expect(decodeRequest(header().int32(-1).toBuffer())).toMatchObject({ body: { topics: null } });
    expect(decodeRequest(header().int32(0).toBuffer())).toMatchObject({ body: { topics: [] } });
  });

  test("bytes after the body are ignored, and counted, as Kafka's parser ignores them", () => {
    const frame = new KafkaWriter()
      .int16(3)
      .int16(0)
      .int32(1)
      .nullableString('c', false)
      .int32(0)
      .int8(0)
      .toBuffer();
    expect(decodeRequest(frame)).toMatchObject({ kind: 'request', body: { topics: [] }, trailingBytes: 1 });
  });

  test('every truncation of a valid request is refused with a KafkaProtocolError', () => {
    const frames = [
      apiVersionsV3Frame(),
      new KafkaWriter()
        .int16(3)
        .int16(4)
        .int32(1)
        .nullableString('c', false)
        .int32(1)
        .nullableString('t', false)
        .boolean(true)
        .toBuffer(),
    ];
    for (const frame of frames) {
      for (let length = 0; length < frame.length; length++) {
        expect(() => decodeRequest(frame.subarray(0, length))).toThrow(KafkaProtocolError);
      }
    }
  });

  test('random frames are decoded or refused with a KafkaProtocolError, never anything else', () => {
    const servedKey = fc.constantFrom(...ADVERTISED_API_VERSIONS);
    const frame = fc.oneof(
      fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes)),
      // A served key and version followed by random bytes: the body decoder meets garbage.
      fc.tuple(servedKey, fc.nat(5), fc.uint8Array({ maxLength: 96 })).map(([api, dv, bytes]) =>
        Buffer.concat([
          new KafkaWriter()
            .int16(api.apiKey)
            .int16(Math.min(api.minVersion + dv, api.maxVersion))
            .int32(1)
            .toBuffer(),
          Buffer.from(bytes),
        ]),
      ),
    );
    fc.assert(
      fc.property(frame, (bytes) => {
        try {
          decodeRequest(bytes);
        } catch (error) {
          expect(error).toBeInstanceOf(KafkaProtocolError);
        }
      }),
      { numRuns: 3000 },
    );
  });

  test('a lying array length is refused before anything is allocated for it', () => {
    const frame = new KafkaWriter()
      .int16(METADATA.apiKey)
      .int16(1)
      .int32(1)
      .nullableString('c', false)
      .int32(2_000_000_000)
      .toBuffer();
    expect(() => decodeRequest(frame)).toThrow(/array of 2000000000 elements/);
  });
});
