import type { Db } from 'mongodb';
import type { MinorUnits } from '../../../../platform/money/money.js';

/**
 * One aggregator's ACH debits of one entry date and the returns of those debits, by return code,
 * in cents. `appliedEvents` makes applying an activity idempotent. `_id` is `<svcAggregatorId>:<date>`.
 */
export interface AchDayDocument {
  _id: string;
  svcAggregatorId: string;
  date: string;
  debits: number;
  debitCents: number;
  returns: Record<string, { count: number; cents: number }>;
  appliedEvents: string[];
}

/** A stored return-rates report: every field of the spec's item, for one reporting date. */
export interface ReturnRatesReport {
  _id: string;
  svcAggregatorId: string;
  /** The reporting date: the window is the 60 days before it. */
  reportDate: string;
  minDate: string;
  maxDate: string;
  adminRate: number;
  adminAmountRate: number;
  adminDaysOver: number;
  adminReturns: number;
  adminReturnsAmount: MinorUnits;
  unAuthorizedRate: number;
  unAuthorizedAmountRate: number;
  unAuthorizedDaysOver: number;
  unAuthorizedReturns: number;
  unAuthorizedReturnsAmount: MinorUnits;
  totalRate: number;
  totalAmountRate: number;
  totalDaysOver: number;
  totalReturns: number;
  totalReturnsAmount: MinorUnits;
  nsfReturns: number;
  nsfReturnsAmount: MinorUnits;
  fedDR: number;
  fedDRAmount: MinorUnits;
  fileName: string;
  notes: string[];
  dtsCreatedAt: Date;
  updatedAt: Date;
}

/** A report's figures, as `achReturnRates` answers them: amounts in cents (ACH moves US dollars). */
export type ReturnRatesFigures = Omit<ReturnRatesReport, '_id' | 'reportDate' | 'notes'>;

export function returnRateCollections(db: Db) {
  return {
    days: db.collection<AchDayDocument>('achDays'),
    reports: db.collection<ReturnRatesReport>('achReturnRateReports'),
  };
}

/** The indexes of every query on these collections: an aggregator's days and reports. */
export async function createReturnRateIndexes(db: Db): Promise<void> {
  const { days, reports } = returnRateCollections(db);
  await days.createIndex({ svcAggregatorId: 1, date: 1 });
  await reports.createIndex({ svcAggregatorId: 1, maxDate: -1 });
  await reports.createIndex({ svcAggregatorId: 1, reportDate: -1 });
}
