import { fromMinor, minor } from '../money/money.js';
import type { AchActivity } from '../contracts/events.js';
import { addDays } from '../contracts/dates.js';

/** The Nacha return codes the demo history draws its unauthorized and administrative returns from. */
const UNAUTHORIZED_CODES = ['R05', 'R07', 'R10', 'R11', 'R29', 'R51'] as const;
const ADMINISTRATIVE_CODES = ['R02', 'R03', 'R04'] as const;

/** A small deterministic pseudo-random generator, so demo data and benchmarks are the same every run. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A deterministic history of ACH debits and returns for an aggregator: `perDay` debits a day for
 * `days` days up to `endDate`, with returns at the given per-debit probabilities, and a stretch
 * (`spike`) of days with many unauthorized returns, so that a report goes out of compliance.
 */
export function generateAchHistory(options: {
  svcAggregatorId: string;
  endDate: string;
  days: number;
  perDay: number;
  seed: number;
  spike?: { fromDay: number; toDay: number; unauthorizedRate: number };
}): AchActivity[] {
  const random = seededRandom(options.seed);
  const activities: AchActivity[] = [];
  for (let day = 0; day < options.days; day += 1) {
    const entryDate = addDays(options.endDate, day - options.days + 1);
    for (let i = 0; i < options.perDay; i += 1) {
      const svcTransactionId = `ach_${options.svcAggregatorId}_${entryDate.replaceAll('-', '')}_${i}`;
      const amount = fromMinor(minor(Math.round((20 + random() * 480) * 100)), 'USD');
      activities.push({
        eventId: `${svcTransactionId}_debit`,
        kind: 'debit',
        svcAggregatorId: options.svcAggregatorId,
        svcTransactionId,
        entryDate,
        amount,
        returnCode: null,
      });
      const inSpike = options.spike && day >= options.spike.fromDay && day <= options.spike.toDay;
      const roll = random();
      let code: string | null = null;
      if (inSpike && roll < options.spike!.unauthorizedRate) code = UNAUTHORIZED_CODES[Math.floor(random() * UNAUTHORIZED_CODES.length)]!;
      else if (roll < 0.003) code = 'R10';
      else if (roll < 0.02) code = ADMINISTRATIVE_CODES[Math.floor(random() * ADMINISTRATIVE_CODES.length)]!;
      else if (roll < 0.05) code = 'R01';
      if (code)
        activities.push({
          eventId: `${svcTransactionId}_return`,
          kind: 'return',
          svcAggregatorId: options.svcAggregatorId,
          svcTransactionId,
          entryDate,
          amount,
          returnCode: code,
        });
    }
  }
  return activities;
}
