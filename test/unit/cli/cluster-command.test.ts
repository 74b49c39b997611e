import { clusterJson, clusterText } from '../../../src/cli/cluster-command';
import type { ClusterLayout } from '../../../src/client/cohort-admin';
import { runCli } from '../../../src/cli/run-cli';
import { captureContext } from './cli-harness';

const LAYOUT: ClusterLayout = {
  nodes: [
    { nodeId: 1, host: '10.0.0.1', port: 7070 },
    { nodeId: 2, host: '10.0.0.2', port: 7070 },
  ],
  controllerId: 2,
  groups: 3,
  unansweredNodes: [],
  offsetsPartitions: [
    { partition: 0, leaderId: 2, leaderEpoch: 4, replicas: [2, 1], isr: [2, 1], groups: 2, error: null },
    { partition: 1, leaderId: -1, leaderEpoch: 7, replicas: [1, 2], isr: [], groups: 1, error: null },
  ],
};

describe('cohort cluster describe', () => {
  it('prints the nodes, the controller and each __consumer_offsets partition in tables', () => {
    expect(clusterText(LAYOUT)).toBe(
      [
        'NODE  ADDRESS',
        '1     10.0.0.1:7070',
        '2     10.0.0.2:7070',
        '',
        'CONTROLLER: 2',
        '',
        'TOPIC               PARTITION  LEADER  LEADER-EPOCH  REPLICAS  ISR  #GROUPS',
        '__consumer_offsets  0          2       4             2,1       2,1  2',
        '__consumer_offsets  1          none    7             1,2       -    1',
        '',
      ].join('\n'),
    );
  });

  it('says so when there is no __consumer_offsets topic', () => {
    expect(clusterText({ ...LAYOUT, offsetsPartitions: null })).toContain(
      '__consumer_offsets is not a topic of this cluster (yet)',
    );
  });

  it('names the nodes that did not answer, under the controller', () => {
    const text = clusterText({ ...LAYOUT, unansweredNodes: [{ nodeId: 1, address: '10.0.0.1:7070' }] });
    expect(text).toContain(
      'CONTROLLER: 2\nNOT ANSWERING: 1 (10.0.0.1:7070): killed or stopped? Metadata lists a node until its session\n',
    );
    expect(clusterText(LAYOUT)).not.toContain('NOT ANSWERING');
  });

  it('gives the same as one JSON document', () => {
    expect(clusterJson(LAYOUT)).toEqual({
      nodes: LAYOUT.nodes,
      controllerId: 2,
      groups: 3,
      unansweredNodes: [],
      offsetsPartitions: [
        { partition: 0, leaderId: 2, leaderEpoch: 4, replicas: [2, 1], isr: [2, 1], groups: 2, error: null },
        { partition: 1, leaderId: -1, leaderEpoch: 7, replicas: [1, 2], isr: [], groups: 1, error: null },
      ],
    });
  });

  it('is listed by cohort --help and has a describe subcommand', async () => {
    const help = captureContext();
    expect(await runCli(['--help'], help.context)).toBe(0);
    expect(help.out()).toContain('  cluster');
    const sub = captureContext();
    expect(await runCli(['cluster', '--help'], sub.context)).toBe(0);
    expect(sub.out()).toMatch(/describe +Shows where everything is/);
  });
});
