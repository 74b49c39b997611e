import { Registry } from 'prom-client';
import { LatencyHistogram } from '../../../../src/server/metrics/latency-histogram';

describe('LatencyHistogram', () => {
  it("exposes cumulative buckets, +Inf, sum and count in Prometheus text, as prom-client's Histogram does", async () => {
    const registry = new Registry();
    const histogram = new LatencyHistogram({
      name: 'test_call_seconds',
      help: 'Test calls.',
      labelNames: ['method'],
      buckets: [0.25, 1],
    }).registerIn(registry);
    const fast = histogram.recorder('Fast');
    fast.observe(0.125);
    fast.observe(0.25); // a bound is inclusive
    fast.observe(0.5);
    histogram.recorder('Slow').observe(3);
    expect(await registry.metrics()).toBe(
      [
        '# HELP test_call_seconds Test calls.',
        '# TYPE test_call_seconds histogram',
        'test_call_seconds_bucket{method="Fast",le="0.25"} 2',
        'test_call_seconds_bucket{method="Fast",le="1"} 3',
        'test_call_seconds_bucket{method="Fast",le="+Inf"} 3',
        'test_call_seconds_sum{method="Fast"} 0.875',
        'test_call_seconds_count{method="Fast"} 3',
        'test_call_seconds_bucket{method="Slow",le="0.25"} 0',
        'test_call_seconds_bucket{method="Slow",le="1"} 0',
        'test_call_seconds_bucket{method="Slow",le="+Inf"} 1',
        'test_call_seconds_sum{method="Slow"} 3',
        'test_call_seconds_count{method="Slow"} 1',
        '',
      ].join('\n'),
    );
  });

  it('hands out one recorder per label set, which keeps working after a reset', async () => {
    const registry = new Registry();
    const histogram = new LatencyHistogram({ name: 'h_seconds', help: 'h', labelNames: ['a'] }).registerIn(
      registry,
    );
    const recorder = histogram.recorder('x');
    expect(histogram.recorder('x')).toBe(recorder);
    recorder.observe(1);
    registry.resetMetrics();
    recorder.observe(2);
    const text = await registry.metrics();
    expect(text).toContain('h_seconds_sum{a="x"} 2\n');
    expect(text).toContain('h_seconds_count{a="x"} 1\n');
  });

  it('refuses the wrong number of label values and buckets that do not increase', () => {
    const histogram = new LatencyHistogram({ name: 'h', help: 'h', labelNames: ['a', 'b'] });
    expect(() => histogram.recorder('only-one')).toThrow('h takes labels a, b, got 1');
    expect(() => new LatencyHistogram({ name: 'h', help: 'h', labelNames: [], buckets: [1, 1] })).toThrow(
      'buckets must increase',
    );
  });
});
