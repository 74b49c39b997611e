// Lives in the protocol layer with the consumer protocol, which the server decodes too.
export { ConsumerProtocolError } from '../protocol/consumer-protocol-error';
