import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { applyMigrations, convertOnce, type Migration, type StoredDocument } from '../../platform/mongo/migrations.js';
import { connectMongo, type Mongo } from '../../platform/mongo/mongo.js';
import { PAYMENTS_MIGRATIONS } from '../../subgraphs/payments/src/migrations.js';
import { COMPLIANCE_MIGRATIONS } from '../../subgraphs/compliance/src/migrations.js';

describe('migrations of stored documents', () => {
  let mongo: Mongo;
  beforeAll(async () => {
    mongo = await connectMongo(inject('mongodbUri'), `migrate_${process.pid}_`);
  });
  afterAll(async () => {
    for (const name of ['payments', 'compliance', 'user'] as const) await mongo.db(name).dropDatabase();
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
    await db.collection('paymentLinks').insertOne({ _id: 'l1' as never, currency: 'USD', amount: 145, refundedCents: 2000 });
    await db.collection('refunds').insertOne({ _id: 'r1' as never, currency: 'USD', amount: 0.1, ach: { payment: { amount: 0.1, currency: 'USD' }, result: null } });
    await db.collection('beneficiaries').insertOne({ _id: 'b1' as never, defaultAmount: 1450.5, defaultCurrency: null });
    await db.collection('beneficiaryUndos').insertOne({ _id: 'u1' as never, previous: { defaultAmount: 99.99 } });

    await Promise.all([applyMigrations(db, PAYMENTS_MIGRATIONS), applyMigrations(db, PAYMENTS_MIGRATIONS)]);
    await applyMigrations(db, PAYMENTS_MIGRATIONS);

    const strip = (doc: Record<string, unknown> | null) => doc && Object.fromEntries(Object.entries(doc).filter(([key]) => key !== 'migratedBy'));
    expect(strip(await db.collection('accounts').findOne({ _id: 'a1' as never }))).toEqual({ _id: 'a1', currency: 'USD', balance: 245_075, availableBalance: 1999 });
    const transactions = await db.collection<{ amount: number; debit: number; credit: number }>('transactions').find({}).sort({ _id: 1 }).toArray();
    expect(transactions.map((t) => [t.amount, t.debit, t.credit])).toEqual([[-1234, 1234, 0], [1250, 0, 1250]]);
    expect(strip(await db.collection('paymentLinks').findOne({ _id: 'l1' as never }))).toEqual({ _id: 'l1', currency: 'USD', amount: 14_500, refunded: 2000 });
    expect(await db.collection('refunds').findOne({ _id: 'r1' as never })).toMatchObject({ amount: 10, ach: { payment: { amount: 10 } } });
    expect(await db.collection('beneficiaries').findOne({ _id: 'b1' as never })).toMatchObject({ defaultAmount: 145_050 });
    expect(await db.collection('beneficiaryUndos').findOne({ _id: 'u1' as never })).toMatchObject({ previous: { defaultAmount: 9999 } });
    expect(await db.collection('migrations').findOne({ _id: 'payments-money-in-minor-units' as never })).toMatchObject({ state: 'done' });
  });

  it('gives bounds without a currency the home currency', async () => {
    const db = mongo.db('compliance');
    await db.collection('restrictions').insertOne({ _id: 'x1' as never, fromAmount: 500.01, fromAmountCurrency: 'USD', toAmount: 100, toAmountCurrency: null });
    await applyMigrations(db, COMPLIANCE_MIGRATIONS);
    expect(await db.collection('restrictions').findOne({ _id: 'x1' as never })).toMatchObject({ fromAmount: 50_001, fromAmountCurrency: 'USD', toAmount: 10_000, toAmountCurrency: 'USD' });
  });

  it('finishes what a process that died part of the way left, converting no document twice', async () => {
    const db = mongo.db('user');
    const things = db.collection<{ _id: string; n: number }>('things');
    await things.insertMany([{ _id: 'a', n: 1 }, { _id: 'b', n: 2 }, { _id: 'c', n: 3 }]);
    const double = (doc: StoredDocument) => ({ n: (doc.n as number) * 2 });
    // The dead process converted one document and held a claim whose lease ran out.
    await convertOnce(db, 'things', 'double', (doc) => (doc._id === 'a' ? double(doc) : null));
    await db.collection('migrations').insertOne({ _id: 'double' as never, state: 'running', owner: 'dead', leaseUntil: new Date(Date.now() - 1000), dtsDone: null });
    const migration: Migration = { id: 'double', run: async (target) => { await convertOnce(target, 'things', 'double', double); } };
    await applyMigrations(db, [migration]);
    expect((await things.find({}).sort({ _id: 1 }).toArray()).map((t) => t.n)).toEqual([2, 4, 6]);
  });

  it('waits for a claim that another process holds, and runs nothing itself', async () => {
    const db = mongo.db('user');
    await db.collection('migrations').insertOne({ _id: 'held' as never, state: 'running', owner: 'other', leaseUntil: new Date(Date.now() + 60_000), dtsDone: null });
    let ran = false;
    const waiting = applyMigrations(db, [{ id: 'held', run: async () => { ran = true; } }]);
    await new Promise((resolve) => setTimeout(resolve, 600));
    await db.collection('migrations').updateOne({ _id: 'held' as never }, { $set: { state: 'done' } });
    await waiting;
    expect(ran).toBe(false);
  });
});
