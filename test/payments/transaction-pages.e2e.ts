import { randomBytes } from 'node:crypto';
import { minor, ZERO } from '../../platform/money/money.js';
import fc from 'fast-check';
import type { Collection, Filter } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { connectMongo, type Mongo } from '../../platform/mongo/mongo.js';
import {
  accountMonth,
  encodeCursor,
  ensureAccountMonths,
  newestTransactions,
  pageKey,
  transactionPagesLoader,
  transactionsCollection,
  type TransactionDocument,
} from '../../subgraphs/payments/src/accounts/transactions-datasource.js';

// newestTransactions reads an account's transactions a window of months at a time; the one read
// by the account alone, sorted and limited, is the oracle it must always agree with.

const DAY = 24 * 3600 * 1000;
const NOW = Date.now();

const transaction = (SvcAccountId: string, n: number, dtsValue: Date, state: string): TransactionDocument => ({
  _id: `${SvcAccountId}_t${n}`,
  transactionId: `${SvcAccountId}_t${n}`,
  SvcAccountId,
  SvcUserId: 'u',
  SvcCardId: null,
  transactionIdBO: null,
  debitTransactionId: null,
  creditTransactionId: null,
  sourceSvcAccountId: null,
  destinationSvcAccountId: null,
  amount: minor(-100),
  debit: minor(100),
  credit: ZERO,
  currency: 'USD',
  transactionState: state,
  isPending: false,
  isComplete: true,
  isDeclined: false,
  txnType: null,
  typeName: null,
  narrative: null,
  narrativeSource: null,
  narrativeDestination: null,
  reference: null,
  attachments: null,
  labels: [],
  details: { memos: [] },
  internal: null,
  dtsRecorded: dtsValue,
  dtsValue,
  dtsBooked: dtsValue,
  dtsCompleted: dtsValue,
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
    const days = [
      [1, 2, 2, 3, 40, 41, 200],
      [5, 400, 800, 1200, 1600, 2000, 2400, 2800],
      Array.from({ length: 60 }, (_, i) => i * 9),
      [1500, 1501, 2900],
      [],
    ];
    const docs = days.flatMap((ages, a) =>
      ages.map((age, n) => transaction(`acc${a}`, n, new Date(NOW - age * DAY), n % 3 === 0 ? 'pending' : 'confirmed')),
    );
    // An account on the edges of months: the first and the last millisecond of each, ties included, and one past now.
    const edges = [0, 1, 2, 5, 13, 40].flatMap((back) => {
      const start = Date.UTC(new Date(NOW).getUTCFullYear(), new Date(NOW).getUTCMonth() - back, 1);
      return [start, start, start - 1, start + DAY / 2];
    });
    docs.push(...[...edges, NOW + DAY / 2].map((at, n) => transaction('edges', n, new Date(at), n % 2 === 0 ? 'pending' : 'confirmed')));
    // Fixed dates, for counting reads whatever the day of the run.
    docs.push(
      ...['2026-05-10', '2026-05-12', '2026-04-02'].map((date, n) => transaction('fixed', n, new Date(`${date}T12:00:00Z`), 'confirmed')),
    );
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
    expect(await transactions.findOne({ _id: 'acc1_t99' })).toMatchObject({
      accountMonth: accountMonth('acc1', new Date(NOW - 3300 * DAY)),
    });
    expect(await ensureAccountMonths(transactions)).toBe(0);
  });

  it('answers as one read by the account would, for any account, limit, filter and bounds (fixed seed)', async () => {
    const sortedOracle = async (
      SvcAccountId: string,
      filter: Filter<TransactionDocument>,
      limit: number,
      before: Date | null,
      since: Date | null,
    ) => {
      const bounds: Filter<TransactionDocument>[] = [{ SvcAccountId }, filter];
      if (before) bounds.push({ dtsValue: { $lt: before } });
      if (since) bounds.push({ dtsValue: { $gte: since } });
      return (await transactions.find({ $and: bounds }).sort({ dtsValue: -1, _id: -1 }).limit(limit).toArray()).map((t) => t._id);
    };
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('acc0', 'acc1', 'acc2', 'acc3', 'acc4', 'edges', 'nobody'),
        fc.integer({ min: 1, max: 70 }),
        fc.constantFrom<Filter<TransactionDocument>>({}, { transactionState: 'pending' }, { transactionState: 'confirmed' }),
        fc.option(fc.integer({ min: 0, max: 3000 }), { nil: null }),
        fc.option(fc.integer({ min: 0, max: 3500 }), { nil: null }),
        async (SvcAccountId, limit, filter, beforeAge, sinceAge) => {
          const before = beforeAge === null ? null : new Date(NOW - beforeAge * DAY);
          const since = sinceAge === null ? null : new Date(NOW - sinceAge * DAY);
          const withBounds: Filter<TransactionDocument> = {
            $and: [filter, ...(before ? [{ dtsValue: { $lt: before } }] : []), ...(since ? [{ dtsValue: { $gte: since } }] : [])],
          };
          const read = await newestTransactions(transactions, SvcAccountId, withBounds, limit, { before, since });
          expect(read.map((t) => t._id)).toEqual(await sortedOracle(SvcAccountId, filter, limit, before, since));
        },
      ),
      { seed: 20261126, numRuns: 60 },
    );
  });

  it('walks every page of an account through the connection’s cursors in the order of one read (fixed seed)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('acc1', 'acc2', 'edges'),
        fc.integer({ min: 1, max: 9 }),
        fc.constantFrom<{ transactionState?: string }>({}, { transactionState: 'pending' }),
        async (SvcAccountId, first, filter) => {
          const all = (
            await transactions
              .find({ SvcAccountId, ...filter })
              .sort({ dtsValue: -1, _id: -1 })
              .toArray()
          ).map((t) => t._id);
          const walked: string[] = [];
          let after: string | null = null;
          for (let pages = 0; pages < 100; pages += 1) {
            const page = await transactionPagesLoader(transactions).load(pageKey({ SvcAccountId, currency: 'USD' }, first, after, filter));
            walked.push(...page.nodes.map((t) => t._id));
            if (!page.hasNextPage) break;
            after = encodeCursor(page.nodes.at(-1)!);
          }
          expect(walked).toEqual(all);
        },
      ),
      { seed: 20261126, numRuns: 30 },
    );
  });

  it('refuses a cursor whose date is past the years a cursor is written with', async () => {
    const cursor = Buffer.from('+275760-09-13T00:00:00.000Z|x').toString('base64url');
    await expect(
      transactionPagesLoader(transactions).load(pageKey({ SvcAccountId: 'acc1', currency: 'USD' }, 5, cursor)),
    ).rejects.toMatchObject({ extensions: { code: 'VALIDATION_FAILED', field: 'after' } });
  });

  it('reads a recent page in one command and an account with a long history in a bounded number', async () => {
    mongo.commands.reset();
    await newestTransactions(transactions, 'fixed', {}, 2, { before: new Date('2026-05-20T00:00:00Z') });
    expect(mongo.commands.snapshot(mongo.databaseName('payments'))).toEqual({ 'transactions.find': 1 });
    mongo.commands.reset();
    await newestTransactions(transactions, 'acc1', {}, 100);
    // Four windows of months, then what is older in one read.
    expect(mongo.commands.snapshot(mongo.databaseName('payments'))).toEqual({ 'transactions.find': 5 });
  });
});
