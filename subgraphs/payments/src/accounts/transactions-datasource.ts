import DataLoader from 'dataloader';
import type { Collection, Db, Filter } from 'mongodb';
import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import { isIsoDateTime } from '../../../../platform/contracts/dates.js';
import { checkAmount, type MinorUnits } from '../../../../platform/money/money.js';

/** Where a transaction stands (the schema's TransactionState). */
export const TRANSACTION_STATES = ['confirmed', 'pending', 'declined'] as const;

/** A stored transaction record (the spec's Transaction record). */
export interface TransactionDocument {
  _id: string;
  transactionId: string;
  SvcAccountId: string;
  SvcUserId: string;
  SvcCardId: string | null;
  transactionIdBO: string | null;
  debitTransactionId: string | null;
  creditTransactionId: string | null;
  sourceSvcAccountId: string | null;
  destinationSvcAccountId: string | null;
  /** Signed, in `currency`'s minor units. */
  amount: MinorUnits;
  debit: MinorUnits;
  credit: MinorUnits;
  currency: string;
  transactionState: string;
  isPending: boolean;
  isComplete: boolean;
  isDeclined: boolean;
  txnType: string | null;
  typeName: string | null;
  narrative: string | null;
  narrativeSource: string | null;
  narrativeDestination: string | null;
  reference: string | null;
  attachments: Record<string, unknown> | null;
  labels: string[];
  details: { memos: string[] };
  internal: {
    fromSvcUserId: string | null;
    txnType: string | null;
    sourceSvcAccountId: string | null;
    sourceAccountSvcUserId: string | null;
  } | null;
  dtsRecorded: Date | null;
  dtsValue: Date;
  dtsBooked: Date | null;
  dtsCompleted: Date | null;
  /** The account and the month of dtsValue (`accountMonth`): what reads of an account's newest transactions narrow by. */
  accountMonth: string;
  /**
   * False from a card transaction's insertion until it is marked as posted (`card-postings.ts`);
   * a record without the member (every other writer, and card transactions recorded before) is posted.
   */
  posted?: boolean;
}

export function transactionsCollection(db: Db): Collection<TransactionDocument> {
  return db.collection<TransactionDocument>('transactions');
}

/** One page of an account's transactions, newest first. */
export interface TransactionPage {
  nodes: TransactionDocument[];
  hasNextPage: boolean;
}

/** Largest page a client may ask for. */
const MAX_PAGE_SIZE = 1000;

/** The connection's filter (GraphQL `TransactionFilter`), as validated. */
export interface TransactionFilter {
  from?: Date | null;
  to?: Date | null;
  transactionState?: string | null;
  label?: string | null;
  SvcCardId?: string | null;
  /** Decimal text, in the account's currency. */
  minAmount?: string | null;
  maxAmount?: string | null;
}

/** Cursor of a transaction in the newest-first order: its dtsValue and id. */
export function encodeCursor(doc: TransactionDocument): string {
  return Buffer.from(`${doc.dtsValue.toISOString()}|${doc._id}`).toString('base64url');
}

function decodeCursor(cursor: string): { dtsValue: Date; id: string } {
  const [iso, id] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  // Four-digit years only, as encodeCursor writes them: a date near the edge of the range would overflow the month arithmetic.
  const dtsValue = new Date(iso !== undefined && isIsoDateTime(iso) ? iso : '');
  if (!id || Number.isNaN(dtsValue.getTime()))
    throw appError(ErrorCode.VALIDATION_FAILED, 'after is not a cursor of this connection.', { field: 'after' });
  return { dtsValue, id };
}

/** The first day of the month of `date` (UTC), `back` months earlier. */
const monthStart = (date: Date, back = 0) => new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth() - back, 1));

/** How many months `later` is after `earlier` (both first days of a month). */
const monthsBetween = (earlier: Date, later: Date) =>
  (later.getUTCFullYear() - earlier.getUTCFullYear()) * 12 + later.getUTCMonth() - earlier.getUTCMonth();

/** The `accountMonth` of a transaction of `SvcAccountId` valued at `dtsValue`: `<SvcAccountId>|YYYY-MM` (UTC). */
export function accountMonth(SvcAccountId: string, dtsValue: Date): string {
  return `${SvcAccountId}|${dtsValue.toISOString().slice(0, 7)}`;
}

/**
 * Gives `accountMonth` to the transactions stored before it existed (once, at start; none are
 * missing it afterwards, since every writer sets it), and creates its index.
 */
export async function ensureAccountMonths(collection: Collection<TransactionDocument>): Promise<number> {
  await collection.createIndex({ accountMonth: 1 });
  let given = 0;
  for (;;) {
    const missing = await collection
      .find({ accountMonth: { $exists: false } }, { projection: { _id: 1, SvcAccountId: 1, dtsValue: 1 } })
      .limit(500)
      .toArray();
    if (missing.length === 0) return given;
    for (const { _id, SvcAccountId, dtsValue } of missing)
      await collection.updateOne({ _id }, { $set: { accountMonth: accountMonth(SvcAccountId, dtsValue) } });
    given += missing.length;
  }
}

/** How many months each successive read of `newestTransactions` covers, newest first; what is older comes in one last read. */
const MONTH_WINDOWS = [1, 2, 9, 36];

/** How far past now a value date may lie (transactions are valued when recorded; this covers clocks a little apart). */
const VALUE_DATE_LEAD_MS = 24 * 3600 * 1000;

/**
 * An account's newest `limit` transactions that match `filter` and are valued before `before` (or
 * at most a day from now) and not before `since`, newest first. The reads go back a window of
 * months at a time, by equality on the indexed `accountMonth`, and stop once `limit` have been
 * found; what is older than the windows comes in one last read. The embedded FerretDB decodes
 * every document a read's equalities match before it sorts and limits, so a read by the account
 * alone cost as much as the account's whole history.
 */
export async function newestTransactions(
  collection: Collection<TransactionDocument>,
  SvcAccountId: string,
  filter: Filter<TransactionDocument>,
  limit: number,
  bounds: { before?: Date | null; since?: Date | null } = {},
): Promise<TransactionDocument[]> {
  const found: TransactionDocument[] = [];
  const now = Date.now();
  // The month of the last instant before the (exclusive) bound: the newest that can hold a match.
  const newest = monthStart(new Date((bounds.before?.getTime() ?? now + VALUE_DATE_LEAD_MS) - 1));
  // Unbounded, the first read covers this month too when a day from now is next month's.
  const firstExtra = bounds.before ? 0 : Math.max(0, monthsBetween(monthStart(new Date(now)), newest));
  const floor = bounds.since ? monthStart(bounds.since) : null;
  // The filter's own equalities stay at the top level, where the store narrows by them. The account goes
  // in $and beside the bucket, which implies it: given both at the top, a store could read by the account.
  const { $and: and = [], ...top } = filter;
  let back = 0;
  for (const [i, size] of MONTH_WINDOWS.entries()) {
    const months: string[] = [];
    for (; months.length < size + (i === 0 ? firstExtra : 0); back += 1) {
      const month = monthStart(newest, back);
      if (floor && month < floor) break;
      months.push(accountMonth(SvcAccountId, month));
    }
    if (months.length === 0) return found;
    found.push(
      ...(await collection
        .find({ ...top, accountMonth: { $in: months }, $and: [...and, { SvcAccountId }] })
        .sort({ dtsValue: -1, _id: -1 })
        .limit(limit - found.length)
        .toArray()),
    );
    if (found.length >= limit || (floor && monthStart(newest, back) < floor)) return found;
  }
  // The account as a top-level equality: the store narrows by it (nested in $and, it would read the whole collection).
  const older = { ...top, SvcAccountId, $and: [...and, { dtsValue: { $lt: monthStart(newest, back - 1) } }] };
  found.push(
    ...(await collection
      .find(older)
      .sort({ dtsValue: -1, _id: -1 })
      .limit(limit - found.length)
      .toArray()),
  );
  return found;
}

/**
 * One request's loader of transaction pages, keyed by account, page size and cursor. Each
 * distinct page is a few indexed, bounded reads (`newestTransactions`, `limit first + 1`);
 * repeats are served once.
 */
export function transactionPagesLoader(collection: Collection<TransactionDocument>): DataLoader<string, TransactionPage> {
  return new DataLoader<string, TransactionPage>((keys) =>
    Promise.all(
      keys.map(async (key) => {
        const { accountId, first, after, where } = JSON.parse(key) as {
          accountId: string;
          first: number;
          after: string | null;
          where: SerializedFilter;
        };
        const filter = mongoFilter(where);
        let before = where.to ? new Date(where.to) : null;
        if (after) {
          const { dtsValue, id } = decodeCursor(after);
          filter.$and = [{ $or: [{ dtsValue: { $lt: dtsValue } }, { dtsValue, _id: { $lt: id } }] }];
          if (!before || dtsValue < before) before = new Date(dtsValue.getTime() + 1);
        }
        const docs = await newestTransactions(collection, accountId, filter, first + 1, {
          before,
          since: where.from ? new Date(where.from) : null,
        });
        return { nodes: docs.slice(0, first), hasNextPage: docs.length > first };
      }),
    ),
  );
}

type SerializedFilter = {
  from?: string;
  to?: string;
  transactionState?: string;
  label?: string;
  SvcCardId?: string;
  minAmount?: number;
  maxAmount?: number;
};

function mongoFilter(where: SerializedFilter): Filter<TransactionDocument> {
  const filter: Filter<TransactionDocument> = {};
  if (where.from || where.to)
    filter.dtsValue = { ...(where.from ? { $gte: new Date(where.from) } : {}), ...(where.to ? { $lt: new Date(where.to) } : {}) };
  if (where.transactionState) filter.transactionState = where.transactionState;
  if (where.label) filter.labels = where.label;
  if (where.SvcCardId) filter.SvcCardId = where.SvcCardId;
  // Amounts are signed (debits negative); the filter bounds their size, on debit or credit.
  if (where.minAmount !== undefined || where.maxAmount !== undefined) {
    const range = (side: 'debit' | 'credit') => ({
      [side]: {
        $gt: 0,
        ...(where.minAmount !== undefined ? { $gte: where.minAmount } : {}),
        ...(where.maxAmount !== undefined ? { $lte: where.maxAmount } : {}),
      },
    });
    filter.$or = [range('debit'), range('credit')];
  }
  return filter;
}

/** The loader key of a page; validates the page size and the filter. */
export function pageKey(
  account: { SvcAccountId: string; currency: string },
  first: number,
  after: string | null | undefined,
  filter: TransactionFilter | null | undefined = null,
): string {
  const accountId = account.SvcAccountId;
  if (!Number.isInteger(first) || first < 1 || first > MAX_PAGE_SIZE) {
    throw appError(ErrorCode.VALIDATION_FAILED, `first must be an integer from 1 to ${MAX_PAGE_SIZE}.`, { field: 'first' });
  }
  const where: SerializedFilter = {};
  if (filter?.from) where.from = filter.from.toISOString();
  if (filter?.to) where.to = filter.to.toISOString();
  if (filter?.transactionState) {
    if (!(TRANSACTION_STATES as readonly string[]).includes(filter.transactionState))
      throw appError(ErrorCode.VALIDATION_FAILED, 'filter.transactionState must be confirmed, pending or declined.', {
        field: 'filter.transactionState',
      });
    where.transactionState = filter.transactionState;
  }
  if (filter?.label) where.label = filter.label;
  if (filter?.SvcCardId) where.SvcCardId = filter.SvcCardId;
  for (const bound of ['minAmount', 'maxAmount'] as const) {
    const value = filter?.[bound];
    if (value === null || value === undefined) continue;
    where[bound] = checkAmount(value, account.currency, `filter.${bound}`, { zero: true });
  }
  return JSON.stringify({ accountId, first, after: after ?? null, where });
}

/** The indexes of every query on these collections. */
export async function createTransactionIndexes(db: Db): Promise<void> {
  await transactionsCollection(db).createIndex({ SvcAccountId: 1, dtsValue: -1, _id: -1 });
}
