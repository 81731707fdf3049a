/**
 * ACH debits and returns as the payments subgraph reports them to compliance: the shared
 * vocabulary of the return-rate reports.
 */

/** Nacha return codes by the category the return-rate rules count them in. */
export const UNAUTHORIZED_RETURN_CODES = ['R05', 'R07', 'R10', 'R11', 'R29', 'R51'] as const;
export const ADMINISTRATIVE_RETURN_CODES = ['R02', 'R03', 'R04'] as const;
/** Insufficient or uncollected funds. */
export const NSF_RETURN_CODES = ['R01', 'R09'] as const;

/** A Nacha return code: R followed by two digits. */
export const RETURN_CODE_PATTERN = /^R\d{2}$/;

/** Out of compliance at or above these rates, in percent (Nacha: unauthorized 0.5, administrative 3.0, overall 15.0). */
export const THRESHOLDS = { unAuthorized: 0.5, admin: 3.0, total: 15.0 } as const;

/** The rolling window of a report: the 60 days before its reporting date. */
export const WINDOW_DAYS = 60;

/** One event of an aggregator's ACH debits: a debit entered, or a debit returned with a code. */
export interface AchActivity {
  /** The outbox event's id: applying an activity twice counts it once. */
  eventId: string;
  kind: 'debit' | 'return';
  svcAggregatorId: string;
  svcTransactionId: string;
  /** The debit's effective entry date, YYYY-MM-DD: returns count against the day of their debit. */
  entryDate: string;
  amount: number;
  returnCode: string | null;
}

/** Adds days to a YYYY-MM-DD date. */
export function addDays(date: string, days: number): string {
  return new Date(Date.parse(`${date}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);
}

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
      const amount = Math.round((20 + random() * 480) * 100) / 100;
      activities.push({ eventId: `${svcTransactionId}_debit`, kind: 'debit', svcAggregatorId: options.svcAggregatorId, svcTransactionId, entryDate, amount, returnCode: null });
      const inSpike = options.spike && day >= options.spike.fromDay && day <= options.spike.toDay;
      const roll = random();
      let code: string | null = null;
      if (inSpike && roll < options.spike!.unauthorizedRate) code = UNAUTHORIZED_RETURN_CODES[Math.floor(random() * UNAUTHORIZED_RETURN_CODES.length)]!;
      else if (roll < 0.003) code = 'R10';
      else if (roll < 0.02) code = ADMINISTRATIVE_RETURN_CODES[Math.floor(random() * 3)]!;
      else if (roll < 0.05) code = 'R01';
      if (code) activities.push({ eventId: `${svcTransactionId}_return`, kind: 'return', svcAggregatorId: options.svcAggregatorId, svcTransactionId, entryDate, amount, returnCode: code });
    }
  }
  return activities;
}
