/**
 * Where an offset sits on disk, after Kafka's LogOffsetMetadata: the segment it falls in and the byte
 * position of its batch there. DelayedFetch compares two of these (a fetch offset and the high watermark)
 * to count the bytes between them without reading the log: when both are in the same segment the answer
 * is the difference of positions; across segments at least the rest of the first segment is available.
 */
export interface LogOffsetMetadata {
  readonly messageOffset: number;
  readonly segmentBaseOffset: number;
  readonly relativePositionInSegment: number;
}

/** Bytes of log from `from` up to `to` when both lie in one segment; null when they do not. */
export function positionDiff(to: LogOffsetMetadata, from: LogOffsetMetadata): number | null {
  if (to.segmentBaseOffset !== from.segmentBaseOffset) return null;
  return to.relativePositionInSegment - from.relativePositionInSegment;
}
