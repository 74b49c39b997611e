// The consumer protocol is shared with the server (its admin page shows assignments): it lives in the
// protocol layer, and the SDK's modules keep importing it from here.
export {
  CONSUMER_PROTOCOL_TYPE,
  CONSUMER_PROTOCOL_VERSION,
  decodeAssignment,
  decodeSubscription,
  encodeAssignment,
  encodeSubscription,
} from '../protocol/consumer-protocol';
export type {
  ConsumerAssignment,
  DecodedAssignment,
  DecodedSubscription,
  Subscription,
} from '../protocol/consumer-protocol';
