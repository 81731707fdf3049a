import { MongoBulkWriteError, MongoServerError, type Db } from 'mongodb';
import { sumMinor } from '../../../../platform/money/money.js';
import { accountsCollection } from './datasource.js';
import { transactionsCollection, type TransactionDocument } from './transactions-datasource.js';

/*
 * Exactly-once posting of card transactions, without multi-document transactions (FerretDB has
 * none). A transaction is inserted `posted: false`; then, per account, one compare-and-set on the
 * account's `postingSeq` moves the balance by the sum of its unposted transactions and names them
 * in `lastPostings`; then they are marked `posted: true`. A crash at any point leaves a state the
 * next posting for the account finishes.
 *
 * Invariant: a transaction with `posted: false` has moved its account's balance iff its id is in
 * the account's `lastPostings`. So `lastPostings` is marked posted before a compare-and-set may
 * replace it, and the compare-and-set fails if another poster replaced it since it was read.
 */

const DUPLICATE_KEY = 11000;

/** True when every failure of an insert is a duplicate `_id` (the record is there already). */
function onlyDuplicates(error: unknown): boolean {
  if (error instanceof MongoBulkWriteError) {
    const failures = [error.writeErrors].flat();
    return failures.length > 0 && failures.every((failure) => failure.code === DUPLICATE_KEY) && !error.result.getWriteConcernError();
  }
  return error instanceof MongoServerError && error.code === DUPLICATE_KEY;
}

/** Inserts the transactions (`posted: false`) whose ids are not stored yet; a retried or concurrent message's is left as it is. */
async function insertUnposted(db: Db, docs: readonly TransactionDocument[]): Promise<void> {
  if (docs.length === 0) return;
  try {
    await transactionsCollection(db).insertMany(docs.map((doc) => ({ ...doc, posted: false })), { ordered: false });
  } catch (error) {
    if (!onlyDuplicates(error)) throw error;
  }
}

/** Marks transactions posted; idempotent. */
async function markPosted(db: Db, ids: readonly string[]): Promise<void> {
  if (ids.length > 0) await transactionsCollection(db).updateMany({ _id: { $in: [...ids] }, posted: false }, { $set: { posted: true } });
}

/**
 * Moves the account's balance by those of `ids` (its transactions) not yet posted, each once
 * however many callers post them at the same time; answers the ids this call moved it by.
 */
async function postToAccount(db: Db, SvcAccountId: string, ids: readonly string[]): Promise<string[]> {
  const accounts = accountsCollection(db);
  const transactions = transactionsCollection(db);
  for (;;) {
    const account = await accounts.findOne({ _id: SvcAccountId }, { projection: { postingSeq: 1, lastPostings: 1 } });
    if (!account) return [];
    const last = new Set(account.lastPostings ?? []);
    // One read for both: ours not posted yet, and the last posting's not marked yet.
    const found = await transactions.find({ _id: { $in: [...new Set([...ids, ...last])] }, posted: false }, { projection: { _id: 1, SvcAccountId: 1, amount: 1 } }).toArray();
    // The last posting's balance move is done: mark its transactions before anything may replace the list.
    await markPosted(db, found.filter((doc) => last.has(doc._id)).map((doc) => doc._id));
    const unposted = found.filter((doc) => !last.has(doc._id) && doc.SvcAccountId === SvcAccountId);
    if (unposted.length === 0) return [];
    const moved = unposted.map((doc) => doc._id);
    const sum = sumMinor(...unposted.map((doc) => doc.amount));
    const posted = await accounts.updateOne(
      { _id: SvcAccountId, postingSeq: account.postingSeq ?? { $exists: false } },
      { $inc: { balance: sum, availableBalance: sum, postingSeq: 1 }, $set: { lastPostings: moved } },
    );
    // Another poster moved the balance since the read: read again (its transactions may be among ours).
    if (posted.matchedCount === 0) continue;
    await markPosted(db, moved);
    return moved;
  }
}

/**
 * Records card transactions and moves each one's account balance by its amount exactly once,
 * whatever is retried, sent twice at once, or interrupted by a crash; a record already stored
 * under an id is kept as it is. The documents must be checked already (their accounts exist and
 * are in their currency). Answers the ids whose balance move this call made.
 */
export async function postCardTransactions(db: Db, docs: readonly TransactionDocument[]): Promise<Set<string>> {
  await insertUnposted(db, docs);
  const idsByAccount = new Map<string, string[]>();
  for (const doc of docs) {
    const ids = idsByAccount.get(doc.SvcAccountId);
    if (ids) ids.push(doc._id);
    else idsByAccount.set(doc.SvcAccountId, [doc._id]);
  }
  const moved = new Set<string>();
  for (const [SvcAccountId, ids] of idsByAccount) {
    for (const id of await postToAccount(db, SvcAccountId, ids)) moved.add(id);
  }
  return moved;
}
