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
export const MAX_PAGE_SIZE = 100;

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
        const { accountId, first, after } = JSON.parse(key) as { accountId: string; first: number; after: string | null };
        const filter: Filter<TransactionDocument> = { SvcAccountId: accountId };
        if (after) {
          const { dtsValue, id } = decodeCursor(after);
          filter.$or = [{ dtsValue: { $lt: dtsValue } }, { dtsValue, _id: { $lt: id } }];
        }
        const docs = await collection.find(filter).sort({ dtsValue: -1, _id: -1 }).limit(first + 1).toArray();
        return { nodes: docs.slice(0, first), hasNextPage: docs.length > first };
      }),
    ),
  );
}

/** The loader key of a page; validates the page size. */
export function pageKey(accountId: string, first: number, after: string | null | undefined): string {
  if (!Number.isInteger(first) || first < 1 || first > MAX_PAGE_SIZE) {
    throw appError(ErrorCode.VALIDATION_FAILED, `first must be an integer from 1 to ${MAX_PAGE_SIZE}.`, { field: 'first' });
  }
  return JSON.stringify({ accountId, first, after: after ?? null });
}
