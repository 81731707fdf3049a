import { randomUUID } from 'node:crypto';
import { MongoBulkWriteError, MongoServerError, type Db } from 'mongodb';
import { sumMinor, type MinorUnits } from '../../../../platform/money/money.js';
import { purchaseHold } from './card-holds.js';
import { accountsCollection } from './datasource.js';
import { transactionsCollection, type TransactionDocument } from './transactions-datasource.js';

/*
 * Exactly-once posting of card transactions, without multi-document transactions (FerretDB has
 * none). A transaction is inserted `posted: false`; then, per account (all of a batch's accounts in
 * one bulk write), one compare-and-set on the account's `postingSeq` moves the balance by the sum
 * of its unposted transactions and names them in `lastPostings`; then they are marked
 * `posted: true`. A crash at any point leaves a state that sending the message again finishes
 * (the sender's outbox does, as it was never marked carried).
 *
 * Invariant: a transaction with `posted: false` has moved its account's balance iff its id is in
 * the account's `lastPostings`. So `lastPostings` is marked posted before a compare-and-set may
 * replace it, and the compare-and-set fails if another poster replaced it since it was read.
 *
 * A purchase that card authorization held (card-holds.ts) gives its hold back in the same
 * compare-and-set, which then asks that the hold still be listed: the available balance moves by
 * the posting less the hold, once, and is never higher than the balance less the other holds.
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
    await transactionsCollection(db).insertMany(
      docs.map((doc) => ({ ...doc, posted: false })),
      { ordered: false },
    );
  } catch (error) {
    if (!onlyDuplicates(error)) throw error;
  }
}

/** Marks transactions posted; idempotent. */
async function markPosted(db: Db, ids: readonly string[]): Promise<void> {
  if (ids.length > 0) await transactionsCollection(db).updateMany({ _id: { $in: [...ids] }, posted: false }, { $set: { posted: true } });
}

/** An account's posting state as read, and the compare-and-set that would post `moved` on it. */
interface Posting {
  SvcAccountId: string;
  postingSeq: number | undefined;
  moved: string[];
  /** The entries of the holds the posted purchases placed, still listed when read, and what they add up to. */
  holds: string[];
  held: MinorUnits;
}

/**
 * Moves each account's balance by those of its transactions in `idsByAccount` not yet posted, each
 * once however many callers post them at the same time, with one compare-and-set per account sent
 * in one bulk write for the whole batch. Answers the ids this call is known to have moved.
 */
async function postToAccounts(
  db: Db,
  idsByAccount: ReadonlyMap<string, readonly string[]>,
  holdOf: ReadonlyMap<string, string>,
): Promise<Set<string>> {
  const accounts = accountsCollection(db);
  const transactions = transactionsCollection(db);
  const moved = new Set<string>();
  // Names this call's compare-and-sets, so that after a partial bulk write it can tell which went through.
  const poster = randomUUID();
  let pending = new Map(idsByAccount);
  while (pending.size > 0) {
    const states = await accounts
      .find({ _id: { $in: [...pending.keys()] } }, { projection: { postingSeq: 1, lastPostings: 1, purchaseHolds: 1 } })
      .toArray();
    const last = new Set(states.flatMap((account) => account.lastPostings ?? []));
    // One read for both: ours not posted yet, and the last postings' not marked yet.
    const ours = [...pending.values()].flat();
    const found = await transactions
      .find({ _id: { $in: [...new Set([...ours, ...last])] }, posted: false }, { projection: { _id: 1, SvcAccountId: 1, amount: 1 } })
      .toArray();
    // The last postings' balance moves are done: mark their transactions before anything may replace the lists.
    await markPosted(
      db,
      found.filter((doc) => last.has(doc._id)).map((doc) => doc._id),
    );
    const postings: Posting[] = [];
    const sums = new Map<string, ReturnType<typeof sumMinor>>();
    for (const account of states) {
      const wanted = new Set(pending.get(account._id));
      const unposted = found.filter((doc) => wanted.has(doc._id) && !last.has(doc._id) && doc.SvcAccountId === account._id);
      if (unposted.length === 0) continue;
      // By entry: two transactions naming one hold give it back once.
      const holds = [
        ...new Map(
          unposted.flatMap((doc) => {
            const holdId = holdOf.get(doc._id);
            const hold = holdId ? purchaseHold(account, holdId) : undefined;
            return hold ? [[hold.entry, hold] as const] : [];
          }),
        ).values(),
      ];
      postings.push({
        SvcAccountId: account._id,
        postingSeq: account.postingSeq,
        moved: unposted.map((doc) => doc._id),
        holds: holds.map((hold) => hold.entry),
        held: sumMinor(...holds.map((hold) => hold.amount)),
      });
      sums.set(account._id, sumMinor(...unposted.map((doc) => doc.amount)));
    }
    if (postings.length === 0) break;
    const result = await accounts.bulkWrite(
      postings.map((posting) => ({
        updateOne:
          posting.holds.length === 0
            ? {
                filter: { _id: posting.SvcAccountId, postingSeq: posting.postingSeq ?? { $exists: false } },
                update: {
                  $inc: { balance: sums.get(posting.SvcAccountId)!, availableBalance: sums.get(posting.SvcAccountId)!, postingSeq: 1 },
                  $set: { lastPostings: posting.moved, lastPostedBy: poster },
                },
              }
            : {
                filter: {
                  _id: posting.SvcAccountId,
                  postingSeq: posting.postingSeq ?? { $exists: false },
                  purchaseHolds: { $all: posting.holds },
                },
                update: {
                  $inc: {
                    balance: sums.get(posting.SvcAccountId)!,
                    availableBalance: sumMinor(sums.get(posting.SvcAccountId)!, posting.held),
                    postingSeq: 1,
                    holdsSeq: 1,
                  },
                  $set: { lastPostings: posting.moved, lastPostedBy: poster },
                  $pullAll: { purchaseHolds: posting.holds },
                },
              },
      })),
      { ordered: false },
    );
    if (result.matchedCount === postings.length) {
      await markPosted(
        db,
        postings.flatMap((posting) => posting.moved),
      );
      for (const posting of postings) for (const id of posting.moved) moved.add(id);
      break;
    }
    // Another poster moved some balance since the read. The postings that went through hold
    // their ids in `lastPostings` (or, if replaced since, marked posted): the next round leaves them.
    const after = await accounts
      .find({ _id: { $in: postings.map((posting) => posting.SvcAccountId) } }, { projection: { postingSeq: 1, lastPostedBy: 1 } })
      .toArray();
    const went = new Set(
      after
        .filter((account) =>
          postings.some(
            (p) => p.SvcAccountId === account._id && account.postingSeq === (p.postingSeq ?? 0) + 1 && account.lastPostedBy === poster,
          ),
        )
        .map((account) => account._id),
    );
    for (const posting of postings) if (went.has(posting.SvcAccountId)) for (const id of posting.moved) moved.add(id);
    pending = new Map(postings.map((posting) => [posting.SvcAccountId, pending.get(posting.SvcAccountId)!]));
  }
  return moved;
}

/**
 * Records card transactions and moves each one's account balance by its amount exactly once,
 * whatever is retried, sent twice at once, or interrupted by a crash; a record already stored
 * under an id is kept as it is. The documents must be checked already (their accounts exist and
 * are in their currency). `holdOf` names the hold each purchase placed (by transaction id), which
 * its posting takes out. Answers the ids whose balance move this call made.
 */
export async function postCardTransactions(
  db: Db,
  docs: readonly TransactionDocument[],
  holdOf: ReadonlyMap<string, string> = new Map(),
): Promise<Set<string>> {
  await insertUnposted(db, docs);
  const idsByAccount = new Map<string, string[]>();
  for (const doc of docs) {
    const ids = idsByAccount.get(doc.SvcAccountId);
    if (ids) ids.push(doc._id);
    else idsByAccount.set(doc.SvcAccountId, [doc._id]);
  }
  return postToAccounts(db, idsByAccount, holdOf);
}
