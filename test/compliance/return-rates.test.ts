import { describe, expect, it } from 'vitest';
import { addDays } from '../../platform/contracts/dates.js';
import { computeReports } from '../../subgraphs/compliance/src/return-rates/return-rates.js';
import { type AchDayDocument } from '../../subgraphs/compliance/src/return-rates/datasource.js';

type Day = Pick<AchDayDocument, 'debits' | 'debitCents' | 'returns'>;

/**
 * A small history worked out by hand. Every day from 2026-01-01 has 100 debits of 10.00 USD
 * (1,000.00 a day). Returns, against the entry date of their debit:
 * - 2026-01-10: one R10 (unauthorized) and two R03 (administrative) of 10.00 each;
 * - 2026-02-20: one R01 (NSF) of 10.00.
 */
function history(): Map<string, Day> {
  const days = new Map<string, Day>();
  for (let date = '2026-01-01'; date <= '2026-06-30'; date = addDays(date, 1))
    days.set(date, { debits: 100, debitCents: 100_000, returns: {} });
  days.get('2026-01-10')!.returns = { R10: { count: 1, cents: 1000 }, R03: { count: 2, cents: 2000 } };
  days.get('2026-02-20')!.returns = { R01: { count: 1, cents: 1000 } };
  return days;
}

describe('ACH return-rate reports', () => {
  it('computes a report over the 60 days before its reporting date, by count and by amount', () => {
    // Reporting date 2026-03-02: window 2026-01-01 .. 2026-03-01, 60 days x 100 debits = 6,000 debits, 60,000.00 USD.
    // Amounts are kept in cents.
    const [report] = computeReports('agg', history(), '2026-03-02', '2026-03-02');
    expect(report).toMatchObject({
      minDate: '2026-01-01',
      maxDate: '2026-03-01',
      fedDR: 6000,
      fedDRAmount: 6_000_000,
      unAuthorizedReturns: 1,
      unAuthorizedReturnsAmount: 1000,
      unAuthorizedRate: 0.0167,
      unAuthorizedAmountRate: 0.0167,
      adminReturns: 2,
      adminReturnsAmount: 2000,
      adminRate: 0.0333,
      totalReturns: 4,
      totalReturnsAmount: 4000,
      totalRate: 0.0667,
      nsfReturns: 1,
      nsfReturnsAmount: 1000,
      unAuthorizedDaysOver: 0,
      adminDaysOver: 0,
      totalDaysOver: 0,
      notes: [],
    });
  });

  it('drops a day on the 61st day after it: the 60-day boundary', () => {
    // 2026-03-11's window is 2026-01-10 .. 2026-03-10 (still holds the 01-10 returns); 2026-03-12's starts at 01-11.
    const [with10th, without10th] = computeReports('agg', history(), '2026-03-11', '2026-03-12');
    expect(with10th).toMatchObject({ minDate: '2026-01-10', unAuthorizedReturns: 1, adminReturns: 2 });
    expect(without10th).toMatchObject({ minDate: '2026-01-11', unAuthorizedReturns: 0, adminReturns: 0, totalReturns: 1, nsfReturns: 1 });
  });

  it('counts days out of compliance over the last 60 reporting dates and says so in the notes', () => {
    const days = history();
    // 40 unauthorized returns entered on 2026-04-01: 0.5% of the window's 6,000 debits needs 30.
    days.get('2026-04-01')!.returns = { R05: { count: 40, cents: 40_000 } };
    const reports = computeReports('agg', days, '2026-04-01', '2026-06-15');
    const on = (date: string) => reports.find((r) => r.maxDate === addDays(date, -1))!;
    // 2026-04-02 is the first reporting date whose window holds 04-01: 40 / 6,000 = 0.6667%.
    expect(on('2026-04-01')).toMatchObject({ unAuthorizedRate: 0, unAuthorizedDaysOver: 0 });
    expect(on('2026-04-02')).toMatchObject({ unAuthorizedReturns: 40, unAuthorizedRate: 0.6667, unAuthorizedDaysOver: 1 });
    expect(on('2026-04-02').notes).toEqual([
      'Unauthorized return rate 0.6667% is at or above the 0.5% threshold; out of compliance on 1 of the last 60 days.',
    ]);
    expect(on('2026-04-11')).toMatchObject({ unAuthorizedDaysOver: 10 });
    // 04-01 stays in the window for reporting dates 04-02 .. 05-31 (60 dates), then leaves it.
    expect(on('2026-05-31')).toMatchObject({ unAuthorizedRate: 0.6667, unAuthorizedDaysOver: 60 });
    expect(on('2026-06-01')).toMatchObject({ unAuthorizedRate: 0, unAuthorizedDaysOver: 59 });
    expect(on('2026-06-01').notes).toEqual([
      'Unauthorized return rate 0% is below the 0.5% threshold; it was out of compliance on 59 of the last 60 days.',
    ]);
    // The administrative and overall rates stay in compliance: 2 / 6,000 and 42 / 6,000 at most.
    expect(reports.every((r) => r.adminDaysOver === 0 && r.totalDaysOver === 0)).toBe(true);
  });

  it('is out of compliance exactly at the threshold, and in just below it, compared unrounded', () => {
    const at = history();
    at.get('2026-04-01')!.returns = { R05: { count: 30, cents: 30_000 } };
    expect(computeReports('agg', at, '2026-04-02', '2026-04-02')[0]).toMatchObject({ unAuthorizedRate: 0.5, unAuthorizedDaysOver: 1 });
    const below = history();
    below.get('2026-04-01')!.returns = { R05: { count: 29, cents: 29_000 } };
    expect(computeReports('agg', below, '2026-04-02', '2026-04-02')[0]).toMatchObject({
      unAuthorizedRate: 0.4833,
      unAuthorizedDaysOver: 0,
    });
    const rounded = history();
    // One more debit in the window: 30 / 6,001 = 0.49992%, shown as 0.4999 and in compliance.
    rounded.get('2026-03-15')!.debits = 101;
    rounded.get('2026-04-01')!.returns = { R05: { count: 30, cents: 30_000 } };
    expect(computeReports('agg', rounded, '2026-04-02', '2026-04-02')[0]).toMatchObject({ unAuthorizedDaysOver: 0, notes: [] });
  });

  it('rates an empty window as zero, not as a division by zero', () => {
    const [report] = computeReports('agg', new Map(), '2026-01-01', '2026-01-01');
    expect(report).toMatchObject({ fedDR: 0, unAuthorizedRate: 0, adminAmountRate: 0, totalRate: 0 });
  });
});
