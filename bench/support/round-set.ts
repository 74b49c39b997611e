import { median } from './stats';

/**
 * The samples of one bench, by figure name, one per round. Cohort and its baseline run in the same round,
 * one after the other, so their ratio is taken round by round (paired) and then the median of those ratios
 * is reported: a burst of noise from a neighbour then spoils one round's ratio, not every figure.
 */
export class RoundSet {
  private readonly samples = new Map<string, number[]>();

  record(name: string, value: number): void {
    let values = this.samples.get(name);
    if (values === undefined) {
      values = [];
      this.samples.set(name, values);
    }
    values.push(value);
  }

  values(name: string): number[] {
    return this.samples.get(name) ?? [];
  }

  median(name: string): number {
    return median(this.values(name));
  }

  /** The median over rounds of numerator ÷ denominator, paired round by round. */
  medianRatio(numerator: string, denominator: string): number {
    const a = this.values(numerator);
    const b = this.values(denominator);
    const ratios: number[] = [];
    for (let i = 0; i < Math.min(a.length, b.length); i++) ratios.push(a[i] / b[i]);
    return median(ratios);
  }

  /** Sum over rounds (for counts that must be zero in every round, such as early or lost timers). */
  total(name: string): number {
    return this.values(name).reduce((sum, v) => sum + v, 0);
  }

  /** Largest value over rounds. */
  max(name: string): number {
    return Math.max(...this.values(name));
  }
}
