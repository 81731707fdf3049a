import { MongoServerError, type AnyBulkWriteOperation, type Db } from 'mongodb';
import type { AchActivity } from '../../../../platform/contracts/events.js';
import { RETURN_CODE_PATTERN } from '../../../../platform/security/validate.js';
import { HOME_CURRENCY, minor, toMinor } from '../../../../platform/money/money.js';
import { ADMINISTRATIVE_RETURN_CODES, NSF_RETURN_CODES, THRESHOLDS, UNAUTHORIZED_RETURN_CODES, WINDOW_DAYS } from './ach-rules.js';
import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import type { Logger } from '../../../../platform/runtime/logger.js';
import { checkPage, readPage } from '../../../../platform/graphql/paging.js';
import { addDays, isIsoDate } from '../../../../platform/contracts/dates.js';
import { type AchDayDocument, returnRateCollections, type ReturnRatesReport } from './datasource.js';

/** Reports per bulk write: the embedded FerretDB stalls on one update command carrying many updates. */
const REPORTS_PER_WRITE = 50;

type Category = 'unAuthorized' | 'admin' | 'total' | 'nsf';
const CATEGORY_CODES: Record<Exclude<Category, 'total'>, readonly string[]> = {
  unAuthorized: UNAUTHORIZED_RETURN_CODES,
  admin: ADMINISTRATIVE_RETURN_CODES,
  nsf: NSF_RETURN_CODES,
};
const LABEL = { unAuthorized: 'Unauthorized', admin: 'Administrative', total: 'Overall' } as const;

interface DayTotals {
  debits: number;
  debitCents: number;
  count: Record<Category, number>;
  cents: Record<Category, number>;
}

function dayTotals(day: Pick<AchDayDocument, 'debits' | 'debitCents' | 'returns'> | undefined): DayTotals {
  const totals: DayTotals = {
    debits: day?.debits ?? 0,
    debitCents: day?.debitCents ?? 0,
    count: { unAuthorized: 0, admin: 0, total: 0, nsf: 0 },
    cents: { unAuthorized: 0, admin: 0, total: 0, nsf: 0 },
  };
  for (const [code, { count, cents }] of Object.entries(day?.returns ?? {})) {
    totals.count.total += count;
    totals.cents.total += cents;
    for (const category of ['unAuthorized', 'admin', 'nsf'] as const) {
      if (CATEGORY_CODES[category].includes(code)) {
        totals.count[category] += count;
        totals.cents[category] += cents;
      }
    }
  }
  return totals;
}

const percent = (part: number, whole: number) => (whole === 0 ? 0 : Math.round((part / whole) * 100 * 10_000) / 10_000);

/**
 * Computes the reports of every reporting date in [from, to] from daily totals. The window of
 * date D is [D-60, D-1]; a return counts against the entry date of its debit. Rates are in
 * percent, by count and by amount; a rate at or above its threshold is out of compliance, and
 * `daysOver` counts the reporting dates in [D-59, D] whose rate by count was out.
 */
export function computeReports(
  svcAggregatorId: string,
  days: ReadonlyMap<string, Pick<AchDayDocument, 'debits' | 'debitCents' | 'returns'>>,
  from: string,
  to: string,
  now = new Date(),
): ReturnRatesReport[] {
  const firstRated = addDays(from, -(WINDOW_DAYS - 1));
  const window: DayTotals = dayTotals(undefined);
  const add = (totals: DayTotals, sign: 1 | -1) => {
    window.debits += sign * totals.debits;
    window.debitCents += sign * totals.debitCents;
    for (const c of ['unAuthorized', 'admin', 'total', 'nsf'] as const) {
      window.count[c] += sign * totals.count[c];
      window.cents[c] += sign * totals.cents[c];
    }
  };
  // The window of the first rated date: [firstRated-60, firstRated-1].
  for (let d = addDays(firstRated, -WINDOW_DAYS); d < firstRated; d = addDays(d, 1)) add(dayTotals(days.get(d)), 1);
  const over: Array<Record<'unAuthorized' | 'admin' | 'total', boolean>> = [];
  const reports: ReturnRatesReport[] = [];
  for (let date = firstRated, i = 0; date <= to; date = addDays(date, 1), i += 1) {
    if (i > 0) {
      add(dayTotals(days.get(addDays(date, -1))), 1);
      add(dayTotals(days.get(addDays(date, -WINDOW_DAYS - 1))), -1);
    }
    const rate = (c: 'unAuthorized' | 'admin' | 'total') => percent(window.count[c], window.debits);
    // Compared unrounded: 50 returns of 10,001 debits (0.49995%) are in compliance, though shown as 0.5.
    const isOver = (c: 'unAuthorized' | 'admin' | 'total') => window.debits > 0 && window.count[c] * 100 >= THRESHOLDS[c] * window.debits;
    over.push({ unAuthorized: isOver('unAuthorized'), admin: isOver('admin'), total: isOver('total') });
    if (date < from) continue;
    const recent = over.slice(-WINDOW_DAYS);
    const daysOver = (c: 'unAuthorized' | 'admin' | 'total') => recent.filter((o) => o[c]).length;
    const notes: string[] = [];
    for (const c of ['unAuthorized', 'admin', 'total'] as const) {
      const count = daysOver(c);
      if (over.at(-1)![c])
        notes.push(
          `${LABEL[c]} return rate ${rate(c)}% is at or above the ${THRESHOLDS[c]}% threshold; out of compliance on ${count} of the last ${WINDOW_DAYS} days.`,
        );
      else if (count > 0)
        notes.push(
          `${LABEL[c]} return rate ${rate(c)}% is below the ${THRESHOLDS[c]}% threshold; it was out of compliance on ${count} of the last ${WINDOW_DAYS} days.`,
        );
    }
    reports.push({
      _id: `${svcAggregatorId}:${date}`,
      svcAggregatorId,
      reportDate: date,
      minDate: addDays(date, -WINDOW_DAYS),
      maxDate: addDays(date, -1),
      adminRate: rate('admin'),
      adminAmountRate: percent(window.cents.admin, window.debitCents),
      adminDaysOver: daysOver('admin'),
      adminReturns: window.count.admin,
      adminReturnsAmount: minor(window.cents.admin),
      unAuthorizedRate: rate('unAuthorized'),
      unAuthorizedAmountRate: percent(window.cents.unAuthorized, window.debitCents),
      unAuthorizedDaysOver: daysOver('unAuthorized'),
      unAuthorizedReturns: window.count.unAuthorized,
      unAuthorizedReturnsAmount: minor(window.cents.unAuthorized),
      totalRate: rate('total'),
      totalAmountRate: percent(window.cents.total, window.debitCents),
      totalDaysOver: daysOver('total'),
      totalReturns: window.count.total,
      totalReturnsAmount: minor(window.cents.total),
      nsfReturns: window.count.nsf,
      nsfReturnsAmount: minor(window.cents.nsf),
      fedDR: window.debits,
      fedDRAmount: minor(window.debitCents),
      fileName: `ach-return-rates_${svcAggregatorId}_${date}.json`,
      notes,
      dtsCreatedAt: now,
      updatedAt: now,
    });
  }
  return reports;
}

const DUPLICATE_KEY = 11000;

/** Whether two reports of one date carry the same figures and notes (their timestamps aside). */
function sameFigures(a: ReturnRatesReport, b: ReturnRatesReport): boolean {
  const { dtsCreatedAt: _a1, updatedAt: _a2, ...left } = a;
  const { dtsCreatedAt: _b1, updatedAt: _b2, ...right } = b;
  return JSON.stringify(left, Object.keys(left).sort()) === JSON.stringify(right, Object.keys(right).sort());
}

/**
 * Report computations in flight, per aggregator: a computation starts only after the one before it
 * ends, so an older read of the totals never overwrites a newer computation's reports. (Within one
 * process; several compliance processes on MongoDB would need a lease.)
 */
const computing = new Map<string, Promise<unknown>>();

/** ACH return rates: daily totals fed by the payments subgraph, and the reports made from them. */
export class ReturnRates {
  private readonly collections: ReturnType<typeof returnRateCollections>;

  constructor(
    db: Db,
    private readonly logger: Logger,
  ) {
    this.collections = returnRateCollections(db);
  }

  /**
   * Adds activities to the daily totals, each once (by eventId, in a conditional update of its
   * day), then recomputes the stored reports a late return changes. Returns how many were new.
   */
  async apply(activities: AchActivity[]): Promise<number> {
    // The whole batch is checked before anything is counted: a bad activity changes nothing.
    for (const activity of activities) {
      if (!isIsoDate(activity.entryDate))
        throw appError(ErrorCode.VALIDATION_FAILED, 'entryDate must be a date written YYYY-MM-DD.', { field: 'entryDate' });
      if (activity.kind === 'return' && !RETURN_CODE_PATTERN.test(activity.returnCode ?? ''))
        throw appError(ErrorCode.VALIDATION_FAILED, 'returnCode must be a Nacha return code such as R01.', { field: 'returnCode' });
    }
    let applied = 0;
    const changed = new Map<string, string>();
    for (const activity of activities) {
      const cents = toMinor(activity.amount, HOME_CURRENCY, 'amount');
      const inc =
        activity.kind === 'debit'
          ? { debits: 1, debitCents: cents }
          : { [`returns.${activity.returnCode}.count`]: 1, [`returns.${activity.returnCode}.cents`]: cents };
      const filter = { _id: `${activity.svcAggregatorId}:${activity.entryDate}`, appliedEvents: { $ne: activity.eventId } };
      const update = {
        $inc: inc,
        $push: { appliedEvents: activity.eventId },
        $setOnInsert: { svcAggregatorId: activity.svcAggregatorId, date: activity.entryDate },
      };
      let counted: boolean;
      try {
        const result = await this.collections.days.updateOne(filter, update, { upsert: true });
        counted = result.modifiedCount + result.upsertedCount > 0;
      } catch (error) {
        if (!(error instanceof MongoServerError && error.code === DUPLICATE_KEY)) throw error;
        // The day exists: either it holds the event already (a replay), or another event created
        // it a moment ago. Without the upsert, only the second still matches.
        const { $setOnInsert: _insertOnly, ...existing } = update;
        counted = (await this.collections.days.updateOne(filter, existing)).modifiedCount > 0;
      }
      if (!counted) continue;
      applied += 1;
      // Debits and returns alike change the reports whose window holds their entry date.
      const key = activity.svcAggregatorId;
      if (!changed.has(key) || changed.get(key)! > activity.entryDate) changed.set(key, activity.entryDate);
    }
    for (const [svcAggregatorId, entryDate] of changed) {
      const latest = await this.collections.reports.find({ svcAggregatorId }).sort({ reportDate: -1 }).limit(1).next();
      if (!latest) continue;
      // A day's totals reach the rates of the next 60 reports, and their daysOver 59 reports further.
      const from = addDays(entryDate, 1);
      const to = [addDays(entryDate, 2 * WINDOW_DAYS - 1), latest.reportDate].sort()[0]!;
      if (from <= to) await this.compute(svcAggregatorId, from, to);
    }
    return applied;
  }

  /** Computes and stores the reports of [from, to], after any computation of the same aggregator in flight. */
  compute(svcAggregatorId: string, from: string, to: string, now = new Date()): Promise<number> {
    const previous = computing.get(svcAggregatorId) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(() => this.computeNow(svcAggregatorId, from, to, now));
    computing.set(svcAggregatorId, next);
    void next
      .finally(() => {
        if (computing.get(svcAggregatorId) === next) computing.delete(svcAggregatorId);
      })
      .catch(() => undefined);
    return next;
  }

  private async computeNow(svcAggregatorId: string, from: string, to: string, now: Date): Promise<number> {
    const days = await this.collections.days
      .find({ svcAggregatorId, date: { $gte: addDays(from, -2 * WINDOW_DAYS), $lt: to } }, { projection: { appliedEvents: 0 } })
      .toArray();
    const reports = computeReports(svcAggregatorId, new Map(days.map((day) => [day.date, day])), from, to, now);
    if (reports.length === 0) return 0;
    // Write only what is new or changed: a recompute after a late return touches few reports.
    const stored = new Map(
      (await this.collections.reports.find({ svcAggregatorId, reportDate: { $gte: from, $lte: to } }).toArray()).map((report) => [
        report._id,
        report,
      ]),
    );
    const fresh = reports.filter((report) => !stored.has(report._id));
    const changed = reports.filter((report) => {
      const before = stored.get(report._id);
      return before !== undefined && !sameFigures(before, report);
    });
    if (fresh.length > 0) {
      try {
        await this.collections.reports.insertMany(fresh, { ordered: false });
      } catch (error) {
        // A concurrent computation stored some first: theirs are as good as ours.
        if (!(error instanceof MongoServerError && error.code === DUPLICATE_KEY)) throw error;
      }
    }
    const operations: AnyBulkWriteOperation<ReturnRatesReport>[] = changed.map(({ dtsCreatedAt: _created, ...report }) => ({
      updateOne: { filter: { _id: report._id }, update: { $set: report } },
    }));
    for (let i = 0; i < operations.length; i += REPORTS_PER_WRITE)
      await this.collections.reports.bulkWrite(operations.slice(i, i + REPORTS_PER_WRITE), { ordered: false });
    this.logger.info('ach return rates computed', { svcAggregatorId, from, to, inserted: fresh.length, updated: changed.length });
    return reports.length;
  }

  /** Brings every aggregator's reports up to `today`: the daily job. */
  async catchUp(today: string): Promise<void> {
    for (const svcAggregatorId of await this.collections.days.distinct('svcAggregatorId')) {
      const latest = await this.collections.reports.find({ svcAggregatorId }).sort({ reportDate: -1 }).limit(1).next();
      const first = await this.collections.days
        .find({ svcAggregatorId }, { projection: { date: 1 } })
        .sort({ date: 1 })
        .limit(1)
        .next();
      const from = latest ? addDays(latest.reportDate, 1) : addDays(first!.date, 1);
      if (from <= today) await this.compute(svcAggregatorId, from, today);
    }
  }

  /** `POST /transfer-to/ach/return-rates`: one reporting date's report, or the latest first. */
  async list(svcAggregatorId: string, input: { date?: string | null; numberOfRecords?: number | null; skipRecords?: number | null }) {
    const page = checkPage(input);
    const filter = input.date ? { svcAggregatorId, reportDate: input.date } : { svcAggregatorId };
    const { items, total } = await readPage(this.collections.reports.find(filter).sort({ maxDate: -1 }), page);
    return {
      total,
      items: items.map(({ notes, _id, reportDate: _reportDate, ...returnRates }) => ({ notes, returnRates })),
    };
  }
}
