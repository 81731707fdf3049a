import DataLoader from 'dataloader';
import type { Collection, Db, Filter } from 'mongodb';
import { appError, ErrorCode } from '../../../../platform/errors.js';

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
  amount: number;
  debit: number;
  credit: number;
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
  internal: { fromSvcUserId: string | null; txnType: string | null; sourceSvcAccountId: string | null; sourceAccountSvcUserId: string | null } | null;
  dtsRecorded: Date | null;
  dtsValue: Date;
  dtsBooked: Date | null;
  dtsCompleted: Date | null;
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
export const MAX_PAGE_SIZE = 1000;

/** The connection's filter (GraphQL `TransactionFilter`), as validated. */
export interface TransactionFilter {
  from?: Date | null;
  to?: Date | null;
  transactionState?: string | null;
  label?: string | null;
  SvcCardId?: string | null;
  minAmount?: number | null;
  maxAmount?: number | null;
}

/** Cursor of a transaction in the newest-first order: its dtsValue and id. */
export function encodeCursor(doc: TransactionDocument): string {
  return Buffer.from(`${doc.dtsValue.toISOString()}|${doc._id}`).toString('base64url');
}

function decodeCursor(cursor: string): { dtsValue: Date; id: string } {
  const [iso, id] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  const dtsValue = new Date(iso ?? '');
  if (!id || Number.isNaN(dtsValue.getTime())) throw appError(ErrorCode.VALIDATION_FAILED, 'after is not a cursor of this connection.', { field: 'after' });
  return { dtsValue, id };
}

/**
 * One request's loader of transaction pages, keyed by account, page size and cursor. Each
 * distinct page is one indexed, bounded query (`limit first + 1`); repeats are served once.
 */
export function transactionPagesLoader(collection: Collection<TransactionDocument>): DataLoader<string, TransactionPage> {
  return new DataLoader<string, TransactionPage>((keys) =>
    Promise.all(
      keys.map(async (key) => {
        const { accountId, first, after, where } = JSON.parse(key) as { accountId: string; first: number; after: string | null; where: SerializedFilter };
        const filter: Filter<TransactionDocument> = { SvcAccountId: accountId, ...mongoFilter(where) };
        if (after) {
          const { dtsValue, id } = decodeCursor(after);
          filter.$and = [{ $or: [{ dtsValue: { $lt: dtsValue } }, { dtsValue, _id: { $lt: id } }] }];
        }
        const docs = await collection.find(filter).sort({ dtsValue: -1, _id: -1 }).limit(first + 1).toArray();
        return { nodes: docs.slice(0, first), hasNextPage: docs.length > first };
      }),
    ),
  );
}

type SerializedFilter = { from?: string; to?: string; transactionState?: string; label?: string; SvcCardId?: string; minAmount?: number; maxAmount?: number };

function mongoFilter(where: SerializedFilter): Filter<TransactionDocument> {
  const filter: Filter<TransactionDocument> = {};
  if (where.from || where.to) filter.dtsValue = { ...(where.from ? { $gte: new Date(where.from) } : {}), ...(where.to ? { $lt: new Date(where.to) } : {}) };
  if (where.transactionState) filter.transactionState = where.transactionState;
  if (where.label) filter.labels = where.label;
  if (where.SvcCardId) filter.SvcCardId = where.SvcCardId;
  // Amounts are signed (debits negative); the filter bounds their size, on debit or credit.
  if (where.minAmount !== undefined || where.maxAmount !== undefined) {
    const range = (side: 'debit' | 'credit') => ({ [side]: { $gt: 0, ...(where.minAmount !== undefined ? { $gte: where.minAmount } : {}), ...(where.maxAmount !== undefined ? { $lte: where.maxAmount } : {}) } });
    filter.$or = [range('debit'), range('credit')];
  }
  return filter;
}

/** The loader key of a page; validates the page size and the filter. */
export function pageKey(accountId: string, first: number, after: string | null | undefined, filter: TransactionFilter | null | undefined = null): string {
  if (!Number.isInteger(first) || first < 1 || first > MAX_PAGE_SIZE) {
    throw appError(ErrorCode.VALIDATION_FAILED, `first must be an integer from 1 to ${MAX_PAGE_SIZE}.`, { field: 'first' });
  }
  const where: SerializedFilter = {};
  if (filter?.from) where.from = filter.from.toISOString();
  if (filter?.to) where.to = filter.to.toISOString();
  if (filter?.transactionState) {
    if (!['confirmed', 'pending', 'declined'].includes(filter.transactionState)) throw appError(ErrorCode.VALIDATION_FAILED, 'filter.transactionState must be confirmed, pending or declined.', { field: 'filter.transactionState' });
    where.transactionState = filter.transactionState;
  }
  if (filter?.label) where.label = filter.label;
  if (filter?.SvcCardId) where.SvcCardId = filter.SvcCardId;
  for (const bound of ['minAmount', 'maxAmount'] as const) {
    const value = filter?.[bound];
    if (value === null || value === undefined) continue;
    if (!(value >= 0)) throw appError(ErrorCode.VALIDATION_FAILED, `filter.${bound} must not be negative.`, { field: `filter.${bound}` });
    where[bound] = value;
  }
  return JSON.stringify({ accountId, first, after: after ?? null, where });
}
