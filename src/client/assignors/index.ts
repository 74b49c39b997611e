export type {
  Assignor,
  AssignorMember,
  PartitionAssignor,
  RebalanceProtocol,
  Subscription,
} from './partition-assignor';
export { rangeAssign, RANGE_ASSIGNOR } from './range-assignor';
export { roundRobinAssign, ROUND_ROBIN_ASSIGNOR } from './round-robin-assignor';
export { cooperativeStickyAssign, COOPERATIVE_STICKY_ASSIGNOR } from './cooperative-sticky-assignor';
export { stickyAssign } from './sticky-assign';
export { compareMembers } from './member-order';
