/**
 * What `npm run demo` must print, in order, whichever cohort it runs on: the three joins, the assignment,
 * the consumer stopped with SIGKILL, the rebalance after its session timeout (waited out: at least
 * `minWaitS`), the lag back to zero, done. Throws naming the line it did not find. Returns the lines.
 */
export function expectDemoStory(stdout: string, minWaitS: number): string[] {
  const lines = stdout.split('\n');
  const at = (pattern: RegExp): number => {
    const index = lines.findIndex((line) => pattern.test(line));
    if (index < 0) throw new Error(`no line matches ${String(pattern)} in:\n${stdout}`);
    return index;
  };
  const joins = ['consumer-1', 'consumer-2', 'consumer-3'].map((name) =>
    at(new RegExp(`\\] ${name} +joined generation \\d+( as leader)?: owns demo-orders \\[\\d`)),
  );
  const assignment = at(
    /\] group +Stable, 3 members: consumer-1 \[[\d, ]+\] +consumer-2 \[[\d, ]+\] +consumer-3 \[[\d, ]+\]/,
  );
  const stopped = at(/\] demo +stopping consumer-3 with SIGKILL/);
  const rebalanced = at(/\] group +Stable, 2 members: consumer-1 \[[\d, ]+\] +consumer-2 \[[\d, ]+\]/);
  const explained = at(/\] demo +rebalanced after the session timeout/);
  const drained = at(/\] lag +back to 0 on every partition: all \d+ records consumed and committed/);
  const done = at(/\] demo +done in/);
  expect(Math.max(...joins)).toBeLessThan(assignment);
  expect([assignment, stopped, rebalanced, explained, drained, done]).toEqual(
    [assignment, stopped, rebalanced, explained, drained, done].sort((a, b) => a - b),
  );
  // The demo polls DescribeGroups every 200 ms, and the survivors rejoin at their next heartbeat, so the
  // PreparingRebalance it may print between the two is a window it can miss; when it is printed it must
  // sit between the kill and the new assignment. What cannot vary: the group waited out the dead member's
  // session, counted from its last heartbeat (at most a heartbeat interval, a fifth of it, before the kill).
  const preparing = lines.findIndex(
    (line, i) => i > stopped && /\] group +PreparingRebalance, 2 members/.test(line),
  );
  if (preparing >= 0) expect(preparing).toBeLessThan(rebalanced);
  const waitedS = Number(
    (/after the session timeout: ([\d.]+)s after consumer-3/.exec(lines[explained]) as RegExpExecArray)[1],
  );
  expect(waitedS).toBeGreaterThanOrEqual(minWaitS);
  return lines;
}

/** The pids the demo printed for its producer and consumers. */
export function demoPids(stdout: string): number[] {
  return [...(/pids: (.*)/.exec(stdout) as RegExpExecArray)[1].matchAll(/ (\d+)/g)].map((m) => Number(m[1]));
}
