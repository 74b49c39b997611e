import { liveChildProcesses } from '../support/child-processes';
import { CohortCluster } from '../support/cohort-cluster';
import { runCli } from '../support/run-cli';

/**
 * `cohort cluster describe` right after a node was killed (SIGKILL), with the killed node first in the
 * bootstrap list. The others list it in Metadata until its node session expires (30 s here, so that it
 * surely has not while the test runs); its ListGroups is refused. The command answers from the live nodes,
 * naming the killed one, instead of retrying the listing until its request timeout and exiting 4.
 */
describe('cohort cluster describe with a killed node', () => {
  let cluster: CohortCluster | undefined;

  afterAll(async () => {
    await cluster?.stop();
    expect(liveChildProcesses()).toEqual([]);
  }, 60_000);

  it('answers from the live nodes and names the killed one, while Metadata still lists it', async () => {
    cluster = await CohortCluster.start({ nodeCount: 3, sessionTimeoutMs: 30_000 });
    const address = cluster
      .nodeIds()
      .map((id) => cluster!.node(id).target)
      .join(',');
    await cluster.kill(1);
    // A request timeout shorter than the node session: without a bound of its own per node, the listing
    // retried the killed node until this ran out (exit 4).
    const described = await runCli([
      'cluster',
      'describe',
      '--address',
      address,
      '--request-timeout-ms',
      '8000',
      '--json',
    ]);
    expect({ code: described.code, stderr: described.stderr }).toEqual({ code: 0, stderr: '' });
    const layout = JSON.parse(described.stdout) as {
      nodes: { nodeId: number }[];
      unansweredNodes: { nodeId: number; address: string }[];
    };
    expect(layout.nodes.map((n) => n.nodeId)).toEqual([1, 2, 3]); // its session has not expired
    expect(layout.unansweredNodes).toEqual([{ nodeId: 1, address: cluster.node(1).target }]);
  }, 120_000);
});
