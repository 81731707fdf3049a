import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import type { Collection, Filter } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { connectMongo, type Mongo } from '../platform/mongo.js';
import { accountMonth, ensureAccountMonths, newestTransactions, transactionsCollection, type TransactionDocument } from '../subgraphs/payments/src/datasources/transactions.js';

// newestTransactions reads an account's transactions a window of months at a time; the one read
// by the account alone, sorted and limited, is the oracle it must always agree with.

const DAY = 24 * 3600 * 1000;
const NOW = Date.now();

const transaction = (SvcAccountId: string, n: number, dtsValue: Date, state: string): TransactionDocument => ({
  _id: `${SvcAccountId}_t${n}`, transactionId: `${SvcAccountId}_t${n}`, SvcAccountId, SvcUserId: 'u', SvcCardId: null, transactionIdBO: null, debitTransactionId: null,
  creditTransactionId: null, sourceSvcAccountId: null, destinationSvcAccountId: null, amount: -1, debit: 1, credit: 0, currency: 'USD', transactionState: state,
  isPending: false, isComplete: true, isDeclined: false, txnType: null, typeName: null, narrative: null, narrativeSource: null, narrativeDestination: null,
  reference: null, attachments: null, labels: [], details: { memos: [] }, internal: null, dtsRecorded: dtsValue, dtsValue, dtsBooked: dtsValue, dtsCompleted: dtsValue,
  accountMonth: accountMonth(SvcAccountId, dtsValue),
});

describe('an account’s newest transactions, read a window of months at a time', () => {
  let mongo: Mongo;
  let transactions: Collection<TransactionDocument>;

  beforeAll(async () => {
    mongo = await connectMongo(inject('mongodbUri'), `t${randomBytes(4).toString('hex')}_`);
    transactions = transactionsCollection(mongo.db('payments'));
    await transactions.createIndex({ SvcAccountId: 1, dtsValue: -1, _id: -1 });
    await ensureAccountMonths(transactions);
    // Accounts whose histories reach back from days to eight years, dense or sparse, with ties on dtsValue.
    const days = [[1, 2, 2, 3, 40, 41, 200], [5, 400, 800, 1200, 1600, 2000, 2400, 2800], Array.from({ length: 60 }, (_, i) => i * 9), [1500, 1501, 2900], []];
    const docs = days.flatMap((ages, a) => ages.map((age, n) => transaction(`acc${a}`, n, new Date(NOW - age * DAY), n % 3 === 0 ? 'pending' : 'confirmed')));
    // One far in the past with no month bucket yet, as stored before the buckets existed.
    const { accountMonth: _bucketless, ...older } = transaction('acc1', 99, new Date(NOW - 3300 * DAY), 'confirmed');
    await transactions.insertMany(docs);
    await transactions.insertOne(older as TransactionDocument);
  });
  afterAll(async () => {
    await mongo.close();
  });

  it('gives a stored transaction without a month bucket its bucket at start', async () => {
    expect(await ensureAccountMonths(transactions)).toBe(1);
    expect(await transactions.findOne({ _id: 'acc1_t99' })).toMatchObject({ accountMonth: accountMonth('acc1', new Date(NOW - 3300 * DAY)) });
    expect(await ensureAccountMonths(transactions)).toBe(0);
  });

  it('answers as one read by the account would, for any account, limit, filter and bounds (fixed seed)', async () => {
    const sortedOracle = async (SvcAccountId: string, filter: Filter<TransactionDocument>, limit: number, before: Date | null, since: Date | null) => {
      const bounds: Filter<TransactionDocument>[] = [{ SvcAccountId }, filter];
      if (before) bounds.push({ dtsValue: { $lt: before } });
      if (since) bounds.push({ dtsValue: { $gte: since } });
      return (await transactions.find({ $and: bounds }).sort({ dtsValue: -1, _id: -1 }).limit(limit).toArray()).map((t) => t._id);
    };
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('acc0', 'acc1', 'acc2', 'acc3', 'acc4', 'nobody'),
        fc.integer({ min: 1, max: 70 }),
        fc.constantFrom<Filter<TransactionDocument>>({}, { transactionState: 'pending' }, { transactionState: 'confirmed' }),
        fc.option(fc.integer({ min: 0, max: 3000 }), { nil: null }),
        fc.option(fc.integer({ min: 0, max: 3500 }), { nil: null }),
        async (SvcAccountId, limit, filter, beforeAge, sinceAge) => {
          const before = beforeAge === null ? null : new Date(NOW - beforeAge * DAY);
          const since = sinceAge === null ? null : new Date(NOW - sinceAge * DAY);
          const withBounds: Filter<TransactionDocument> = { $and: [filter, ...(before ? [{ dtsValue: { $lt: before } }] : []), ...(since ? [{ dtsValue: { $gte: since } }] : [])] };
          const read = await newestTransactions(transactions, SvcAccountId, withBounds, limit, { before, since });
          expect(read.map((t) => t._id)).toEqual(await sortedOracle(SvcAccountId, filter, limit, before, since));
        },
      ),
      { seed: 20261126, numRuns: 60 },
    );
  });

  it('reads a recent page in one command and an account with a long history in a bounded number', async () => {
    mongo.commands.reset();
    await newestTransactions(transactions, 'acc0', {}, 2);
    expect(mongo.commands.snapshot(mongo.databaseName('payments'))).toEqual({ 'transactions.find': 1 });
    mongo.commands.reset();
    await newestTransactions(transactions, 'acc1', {}, 100);
    // Four windows of months, then what is older in one read.
    expect(mongo.commands.snapshot(mongo.databaseName('payments'))).toEqual({ 'transactions.find': 5 });
  });
});
