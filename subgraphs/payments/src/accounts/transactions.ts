import type { Db } from 'mongodb';
import { PAYMENTS_LIST_CAPS } from '../list-caps.js';
import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import { checkString } from '../../../../platform/security/validate.js';
import { accountsCollection } from './datasource.js';
import { newestTransactions, transactionsCollection, type TransactionDocument } from './transactions-datasource.js';
import { holdCardFunds, releaseCardHolds, type CardHoldPolicy, type CardHoldRelease, type CardHoldRequest } from './card-holds.js';
import { openCheckingAccount, recordCardTransaction, recordCardTransactions } from './card-transactions.js';

/** The end-user spec's recent transactions: at most 30, and only those of the last 12 months. */
const LATEST_LIMIT = 30;
const LATEST_MONTHS = 12;

const notFound = (what: string, field: string) => appError(ErrorCode.NOT_FOUND, `${what} does not exist.`, { field });

/** The account, when it is the user's; another user's account answers as if it did not exist. */
async function ownAccount(db: Db, SvcUserId: string, SvcAccountId: string) {
  const account = await accountsCollection(db).findOne({ _id: SvcAccountId });
  if (!account || account.SvcUserId !== SvcUserId) throw notFound(`Account ${SvcAccountId}`, 'SvcAccountId');
  return account;
}

/** The last 30 transactions of the user's account, or all of the last 12 months, whichever is fewer. A few indexed, bounded reads. */
export async function latestTransactions(
  db: Db,
  SvcUserId: string,
  SvcAccountId: string,
  now = new Date(),
): Promise<TransactionDocument[]> {
  await ownAccount(db, SvcUserId, SvcAccountId);
  const since = new Date(now);
  since.setUTCMonth(since.getUTCMonth() - LATEST_MONTHS);
  return newestTransactions(transactionsCollection(db), SvcAccountId, { dtsValue: { $gte: since } }, LATEST_LIMIT, { since });
}

/**
 * Changes a transaction's comment (kept as its memo) and labels; nothing else of a transaction
 * may change. An absent `changes`, or one with neither member, changes nothing and answers the record.
 */
export async function modifyTransaction(
  db: Db,
  SvcUserId: string,
  SvcAccountId: string,
  transactionId: string,
  changes: { comment?: string | null; labels?: string[] | null } | null | undefined,
): Promise<TransactionDocument> {
  await ownAccount(db, SvcUserId, SvcAccountId);
  const set: Record<string, unknown> = {};
  if (changes && 'comment' in changes) {
    const comment = checkString(changes.comment, 'changes.comment', { min: 1, max: 500 });
    set['details.memos'] = comment ? [comment] : [];
  }
  if (changes && 'labels' in changes) {
    if (changes.labels === null)
      throw appError(ErrorCode.VALIDATION_FAILED, 'changes.labels must be an array of strings (send [] to remove every label).', {
        field: 'changes.labels',
      });
    const labels = [
      ...new Set(
        changes.labels!.map((label, i) => checkString(label, `changes.labels[${i}]`, { min: 1, max: 50, safeText: true })!.trim()),
      ),
    ];
    const cap = PAYMENTS_LIST_CAPS['TransactionChangesInput.labels'];
    if (labels.length > cap)
      throw appError(ErrorCode.VALIDATION_FAILED, `changes.labels may hold at most ${cap} labels.`, { field: 'changes.labels' });
    set.labels = labels;
  }
  const transactions = transactionsCollection(db);
  const updated = Object.keys(set).length
    ? await transactions.findOneAndUpdate({ _id: transactionId, SvcAccountId }, { $set: set }, { returnDocument: 'after' })
    : await transactions.findOne({ _id: transactionId, SvcAccountId });
  if (!updated) throw notFound(`Transaction ${transactionId} of account ${SvcAccountId}`, 'transactionId');
  return updated;
}

/** What follows the database in a feature function's parameters. */
type AfterDb<F> = F extends (db: Db, ...rest: infer R) => unknown ? R : never;

/** Accounts and their transactions: what end users read and change, and what the cards subgraph posts. */
export class AccountBook {
  constructor(
    private readonly db: Db,
    private readonly holdPolicy: CardHoldPolicy,
  ) {}

  /** A user's latest transactions on one of their accounts. */
  latest(...args: AfterDb<typeof latestTransactions>) {
    return latestTransactions(this.db, ...args);
  }

  /** A user's change to one of their transactions (its note, its category). */
  modify(...args: AfterDb<typeof modifyTransaction>) {
    return modifyTransaction(this.db, ...args);
  }

  /** Posts a decided card message as a transaction, once by its message id. */
  recordCardTransaction(...args: AfterDb<typeof recordCardTransaction>) {
    return recordCardTransaction(this.db, ...args);
  }

  /** Posts a batch of decided card messages (card authorization's outbox), each once by its message id. */
  recordCardTransactions(...args: AfterDb<typeof recordCardTransactions>) {
    return recordCardTransactions(this.db, ...args);
  }

  /** Holds an approved card message's amount while it is decided, if the account covers it. */
  holdCardFunds(request: CardHoldRequest) {
    return holdCardFunds(this.db, this.holdPolicy, request);
  }

  /** Releases card holds, each once; `undo` for a decision that lost to another copy of its message. */
  releaseCardHolds(releases: readonly CardHoldRelease[], undo: boolean) {
    return releaseCardHolds(this.db, this.holdPolicy, releases, { undo });
  }

  /** Opens the checking account a new card draws on. */
  openChecking(...args: AfterDb<typeof openCheckingAccount>) {
    return openCheckingAccount(this.db, ...args);
  }
}
