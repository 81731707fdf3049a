import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { applyMigrations, convertOnce, type Migration, type StoredDocument } from '../../platform/mongo/migrations.js';
import { connectMongo, type Mongo } from '../../platform/mongo/mongo.js';
import { PAYMENTS_MIGRATIONS } from '../../subgraphs/payments/src/migrations.js';
import { COMPLIANCE_MIGRATIONS } from '../../subgraphs/compliance/src/migrations.js';
import { CARDS_MIGRATIONS } from '../../subgraphs/cards/src/migrations.js';
import { createCardMessageIndexes } from '../../subgraphs/cards/src/authorization/datasource.js';

describe('migrations of stored documents', () => {
  let mongo: Mongo;
  beforeAll(async () => {
    mongo = await connectMongo(inject('mongodbUri'), `migrate_${process.pid}_`);
  });
  afterAll(async () => {
    for (const name of ['payments', 'compliance', 'cards', 'user'] as const) await mongo.db(name).dropDatabase();
    await mongo.close();
  });

  it('converts amounts stored as floats into minor units, once, however often it is applied', async () => {
    const db = mongo.db('payments');
    // Documents as the code before minor units wrote them.
    await db.collection('accounts').insertOne({ _id: 'a1' as never, currency: 'USD', balance: 2450.75, availableBalance: 19.99 });
    await db.collection('transactions').insertMany([
      { _id: 't1' as never, currency: 'USD', amount: -12.34, debit: 12.34, credit: 0 },
      { _id: 't2' as never, currency: 'JPY', amount: 1250, debit: 0, credit: 1250 },
    ]);
    // The old refunded total was a hundredth of the link's units in every currency.
    await db.collection('paymentLinks').insertMany([
      { _id: 'l1' as never, currency: 'USD', amount: 145, refundedCents: 2000 },
      { _id: 'l2' as never, currency: 'JPY', amount: 1000, refundedCents: 30_000 },
      { _id: 'l3' as never, currency: 'BHD', amount: 10.5, refundedCents: 500 },
    ]);
    await db
      .collection('refunds')
      .insertOne({ _id: 'r1' as never, currency: 'USD', amount: 0.1, ach: { payment: { amount: 0.1, currency: 'USD' }, result: null } });
    await db.collection('beneficiaries').insertMany([
      { _id: 'b1' as never, defaultAmount: 1450.5, defaultCurrency: null },
      { _id: 'b2' as never, defaultAmount: 5000, defaultCurrency: 'JPY' },
    ]);
    // An undo keeps only what its change replaced: the amount, in the beneficiary's currency.
    await db.collection('beneficiaryUndos').insertMany([
      { _id: 'u1' as never, SvcBeneficiaryId: 'b1', previous: { defaultAmount: 99.99 } },
      { _id: 'u2' as never, SvcBeneficiaryId: 'b2', previous: { defaultAmount: 4000 } },
      { _id: 'u3' as never, SvcBeneficiaryId: 'b2', previous: { defaultAmount: 12.5, defaultCurrency: 'EUR' } },
    ]);
    // 12.34 JPY, which the old whole-cents check let in, is rounded, and the log says so.
    await db.collection('iouTransactions').insertOne({ _id: 'i1' as never, currency: 'JPY', lent: 12.34 });

    const logged: Array<Record<string, unknown>> = [];
    const log = (message: string, fields: Record<string, unknown>) => logged.push({ message, ...fields });
    await Promise.all([applyMigrations(db, PAYMENTS_MIGRATIONS, log), applyMigrations(db, PAYMENTS_MIGRATIONS, log)]);
    await applyMigrations(db, PAYMENTS_MIGRATIONS, log);

    const strip = (doc: Record<string, unknown> | null) =>
      doc && Object.fromEntries(Object.entries(doc).filter(([key]) => key !== 'migratedBy'));
    expect(strip(await db.collection('accounts').findOne({ _id: 'a1' as never }))).toEqual({
      _id: 'a1',
      currency: 'USD',
      balance: 245_075,
      availableBalance: 1999,
    });
    const transactions = await db
      .collection<{ amount: number; debit: number; credit: number }>('transactions')
      .find({})
      .sort({ _id: 1 })
      .toArray();
    expect(transactions.map((t) => [t.amount, t.debit, t.credit])).toEqual([
      [-1234, 1234, 0],
      [1250, 0, 1250],
    ]);
    expect(strip(await db.collection('paymentLinks').findOne({ _id: 'l1' as never }))).toEqual({
      _id: 'l1',
      currency: 'USD',
      amount: 14_500,
      refunded: 2000,
    });
    expect(await db.collection('paymentLinks').findOne({ _id: 'l2' as never })).toMatchObject({ amount: 1000, refunded: 300 });
    expect(await db.collection('paymentLinks').findOne({ _id: 'l3' as never })).toMatchObject({ amount: 10_500, refunded: 5000 });
    expect(await db.collection('refunds').findOne({ _id: 'r1' as never })).toMatchObject({ amount: 10, ach: { payment: { amount: 10 } } });
    expect(await db.collection('beneficiaries').findOne({ _id: 'b1' as never })).toMatchObject({ defaultAmount: 145_050 });
    expect(await db.collection('beneficiaryUndos').findOne({ _id: 'u1' as never })).toMatchObject({ previous: { defaultAmount: 9999 } });
    expect(await db.collection('beneficiaries').findOne({ _id: 'b2' as never })).toMatchObject({ defaultAmount: 5000 });
    expect(await db.collection('beneficiaryUndos').findOne({ _id: 'u2' as never })).toMatchObject({ previous: { defaultAmount: 4000 } });
    expect(await db.collection('beneficiaryUndos').findOne({ _id: 'u3' as never })).toMatchObject({ previous: { defaultAmount: 1250 } });
    expect(await db.collection('iouTransactions').findOne({ _id: 'i1' as never })).toMatchObject({ lent: 12 });
    // Once: the two concurrent runs and the third logged the rounding one time.
    expect(logged.filter((line) => line.field === 'lent')).toEqual([expect.objectContaining({ _id: 'i1', was: 12.34, currency: 'JPY' })]);
    expect(await db.collection('migrations').findOne({ _id: 'payments-money-in-minor-units' as never })).toMatchObject({ state: 'done' });
  });

  it("gives a bound without a currency its rule's only currency, or the home currency", async () => {
    const db = mongo.db('compliance');
    await db.collection('restrictions').insertMany([
      {
        _id: 'x1' as never,
        transactionCurrencies: ['*'],
        fromAmount: 500.01,
        fromAmountCurrency: 'USD',
        toAmount: 100,
        toAmountCurrency: null,
      },
      {
        _id: 'x2' as never,
        transactionCurrencies: ['JPY'],
        fromAmount: null,
        fromAmountCurrency: null,
        toAmount: 5000,
        toAmountCurrency: null,
      },
    ]);
    await applyMigrations(db, COMPLIANCE_MIGRATIONS);
    expect(await db.collection('restrictions').findOne({ _id: 'x1' as never })).toMatchObject({
      fromAmount: 50_001,
      fromAmountCurrency: 'USD',
      toAmount: 10_000,
      toAmountCurrency: 'USD',
    });
    // A rule of one currency bounds in that currency.
    expect(await db.collection('restrictions').findOne({ _id: 'x2' as never })).toMatchObject({
      fromAmount: null,
      toAmount: 5000,
      toAmountCurrency: 'JPY',
    });
  });

  it('finishes what a process that died part of the way left, converting no document twice', async () => {
    const db = mongo.db('user');
    const things = db.collection<{ _id: string; n: number }>('things');
    await things.insertMany([
      { _id: 'a', n: 1 },
      { _id: 'b', n: 2 },
      { _id: 'c', n: 3 },
    ]);
    const double = (doc: StoredDocument) => ({ n: (doc.n as number) * 2 });
    // The dead process converted one document and held a claim whose lease ran out.
    await convertOnce(db, 'things', 'double', (doc) => (doc._id === 'a' ? double(doc) : null));
    await db
      .collection('migrations')
      .insertOne({ _id: 'double' as never, state: 'running', owner: 'dead', leaseUntil: new Date(Date.now() - 1000), dtsDone: null });
    const migration: Migration = {
      id: 'double',
      run: async (target) => {
        await convertOnce(target, 'things', 'double', double);
      },
    };
    await applyMigrations(db, [migration]);
    expect((await things.find({}).sort({ _id: 1 }).toArray()).map((t) => t.n)).toEqual([2, 4, 6]);
  });

  it('drops card claims a stopped process left pending, and converts decided messages', async () => {
    const db = mongo.db('cards');
    await db.collection('cardMessages').insertMany([
      { _id: 'm1' as never, state: 'pending', SvcCardId: 'c1', amount: 42 },
      { _id: 'm2' as never, state: 'decided', SvcCardId: 'c1', amount: 42.5, currency: 'USD' },
    ]);
    await applyMigrations(db, CARDS_MIGRATIONS);
    expect(await db.collection('cardMessages').findOne({ _id: 'm1' as never })).toBeNull();
    expect(await db.collection('cardMessages').findOne({ _id: 'm2' as never })).toMatchObject({ amount: 4250 });
  });

  it('makes decided card messages their own events, binds a crediting reversal to its original, and drops later pending claims', async () => {
    // A cards database of its own: the test above applied every cards migration to the shared one.
    const own = await connectMongo(inject('mongodbUri'), `migrate_events_${process.pid}_`);
    const db = own.db('cards');
    try {
      const dts = new Date('2026-11-01T10:00:00Z');
      const decided = {
        state: 'decided',
        SvcCardId: 'c2',
        SvcUserId: 'u2',
        svcAggregatorId: 'agg',
        currency: 'USD',
        responseCode: '00',
        decidedBy: 'card',
        dtsReceived: dts,
      };
      // As the code before wrote them, after the money migration ran: a purchase its reversal credited, that reversal, and a claim left pending since.
      await db.collection('cardMessages').insertMany([
        {
          _id: 'p1' as never,
          ...decided,
          messageType: '0200',
          amount: 500,
          stan: '000001',
          transactionId: 'txn_p1',
          reversedBy: 'r1',
          migratedBy: ['cards-money-in-minor-units'],
        },
        {
          _id: 'r1' as never,
          ...decided,
          messageType: '0420',
          amount: 500,
          stan: '000002',
          transactionId: 'txn_r1',
          reversedBy: null,
          migratedBy: ['cards-money-in-minor-units'],
        },
        { _id: 'x1' as never, state: 'pending', SvcCardId: 'c2', amount: 100, migratedBy: ['cards-money-in-minor-units'] },
      ]);
      await applyMigrations(db, CARDS_MIGRATIONS);
      expect(await db.collection('cardMessages').findOne({ _id: 'x1' as never })).toBeNull();
      expect(await db.collection('cardMessages').findOne({ _id: 'p1' as never })).toMatchObject({
        bindingKey: 'p1',
        reverses: null,
        type: 'card.authorization',
        audience: { SvcUserId: 'u2', svcAggregatorId: 'agg' },
        payload: { messageId: 'p1', messageType: '0200', SvcCardId: 'c2', responseCode: '00', transactionId: 'txn_p1' },
        dtsCreated: dts,
        dtsPublished: dts,
      });
      expect(await db.collection('cardMessages').findOne({ _id: 'r1' as never })).toMatchObject({
        bindingKey: 'reverses:p1',
        reverses: 'p1',
      });
      // The binding index builds on the converted log, and holds: a second reversal of p1 cannot be stored as crediting it.
      await createCardMessageIndexes(db);
      await expect(db.collection('cardMessages').insertOne({ _id: 'r2' as never, bindingKey: 'reverses:p1' })).rejects.toMatchObject({
        code: 11000,
      });
    } finally {
      await db.dropDatabase();
      await own.close();
    }
  });

  it('frees its claim when a migration fails, so the next start runs it again at once', async () => {
    const db = mongo.db('user');
    await expect(applyMigrations(db, [{ id: 'fails', run: () => Promise.reject(new Error('disk full')) }])).rejects.toThrow('disk full');
    let ran = false;
    await applyMigrations(db, [
      {
        id: 'fails',
        run: async () => {
          ran = true;
        },
      },
    ]);
    expect(ran).toBe(true);
  });

  it('waits for a claim that another process holds, and runs nothing itself', async () => {
    const db = mongo.db('user');
    await db
      .collection('migrations')
      .insertOne({ _id: 'held' as never, state: 'running', owner: 'other', leaseUntil: new Date(Date.now() + 60_000), dtsDone: null });
    let ran = false;
    const waiting = applyMigrations(db, [
      {
        id: 'held',
        run: async () => {
          ran = true;
        },
      },
    ]);
    await new Promise((resolve) => setTimeout(resolve, 600));
    await db.collection('migrations').updateOne({ _id: 'held' as never }, { $set: { state: 'done' } });
    await waiting;
    expect(ran).toBe(false);
  });
});
