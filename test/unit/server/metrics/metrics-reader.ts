import type { Registry } from 'prom-client';

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string | number>>;
  readonly value: number;
}

/** Every sample a registry exposes now (collecting what is read on scrape), by the name it is exposed under. */
export async function samplesOf(registry: Registry): Promise<Sample[]> {
  const metrics = await registry.getMetricsAsJSON();
  const samples: Sample[] = [];
  for (const metric of metrics) {
    for (const value of metric.values as {
      value: number;
      labels: Record<string, string | number>;
      metricName?: string;
    }[]) {
      samples.push({ name: value.metricName ?? metric.name, labels: value.labels, value: value.value });
    }
  }
  return samples;
}

/**
 * The value of the one sample named `name` whose labels include `labels`; throws when there is none or
 * more than one, so a test cannot pass by reading the wrong series.
 */
export function valueOf(
  samples: readonly Sample[],
  name: string,
  labels: Record<string, string | number> = {},
): number {
  const found = samples.filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => String(s.labels[k]) === String(v)),
  );
  if (found.length !== 1) {
    throw new Error(`expected one sample ${name}${JSON.stringify(labels)}, found ${found.length}`);
  }
  return found[0].value;
}
