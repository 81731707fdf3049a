import { describe, expect, inject, it } from 'vitest';
import { applyMigrations } from '../../platform/mongo/migrations.js';
import { connectMongo } from '../../platform/mongo/mongo.js';
import { CARDS_MIGRATIONS } from '../../subgraphs/cards/src/migrations.js';
import { createCardMessageIndexes } from '../../subgraphs/cards/src/authorization/datasource.js';

describe('migrations of stored card messages', () => {
  it('gives every message and the transaction of its event a holdId, every event its transaction and release, drops reversedBy, and binds a purchase whose reversal was never stored to itself', async () => {
    const mongo = await connectMongo(inject('mongodbUri'), `migrate_shape_${process.pid}_`);
    const db = mongo.db('cards');
    try {
      const dts = new Date('2026-11-01T10:00:00Z');
      const earlier = ['cards-money-in-minor-units', 'cards-messages-are-events'];
      const decided = {
        state: 'decided',
        SvcCardId: 'c3',
        SvcUserId: 'u3',
        svcAggregatorId: 'agg',
        currency: 'USD',
        responseCode: '00',
        decidedBy: 'card',
        dtsReceived: dts,
        dtsCreated: dts,
        dtsPublished: dts,
        migratedBy: earlier,
      };
      // As the code before holds wrote them, after the earlier migrations ran: a purchase its stored
      // reversal credited, that reversal, a purchase whose reversal's claim was dropped as pending,
      // and an authorization of the current shape.
      await db.collection('cardMessages').insertMany([
        {
          _id: 'p1' as never,
          ...decided,
          messageType: '0200',
          amount: 500,
          stan: '000001',
          transactionId: 'txn_p1',
          reversedBy: 'r1',
          bindingKey: 'p1',
          reverses: null,
          // An event stored before events carried their transaction.
          payload: {
            messageId: 'p1',
            messageType: '0200',
            SvcCardId: 'c3',
            responseCode: '00',
            decidedBy: 'card',
            transactionId: 'txn_p1',
          },
        },
        {
          _id: 'r1' as never,
          ...decided,
          messageType: '0420',
          amount: 500,
          stan: '000002',
          transactionId: 'txn_r1',
          reversedBy: null,
          bindingKey: 'reverses:p1',
          reverses: 'p1',
        },
        {
          _id: 'p2' as never,
          ...decided,
          messageType: '0200',
          amount: 700,
          stan: '000003',
          transactionId: 'txn_p2',
          reversedBy: 'r9',
          bindingKey: 'p2',
          reverses: null,
          // An event stored before holds: its transaction names none, and it carries no release.
          payload: {
            messageId: 'p2',
            messageType: '0200',
            SvcCardId: 'c3',
            responseCode: '00',
            decidedBy: 'card',
            transactionId: 'txn_p2',
            transaction: {
              SvcAccountId: 'acc3',
              SvcUserId: 'u3',
              SvcCardId: 'c3',
              direction: 'debit',
              amount: '7.00',
              currency: 'USD',
              narrative: null,
              reference: null,
            },
          },
        },
        {
          _id: 'a1' as never,
          ...decided,
          messageType: '0100',
          amount: 300,
          stan: '000004',
          transactionId: null,
          holdId: 'h1',
          bindingKey: 'a1',
          reverses: null,
        },
      ]);
      await applyMigrations(db, CARDS_MIGRATIONS);
      const stored = new Map((await db.collection('cardMessages').find({}).toArray()).map((doc) => [String(doc._id), doc]));
      expect(stored.get('p1')).toMatchObject({ holdId: null, bindingKey: 'p1', reverses: null, transactionId: 'txn_p1' });
      expect(stored.get('r1')).toMatchObject({ holdId: null, bindingKey: 'reverses:p1', reverses: 'p1' });
      expect(stored.get('p2')).toMatchObject({ holdId: null, bindingKey: 'reverses:p2', reverses: null, transactionId: 'txn_p2' });
      expect(stored.get('a1')).toMatchObject({ holdId: 'h1', bindingKey: 'a1' });
      expect([...stored.values()].filter((doc) => 'reversedBy' in doc)).toEqual([]);
      // Every event names its transaction and its release, null where there is none, and a transaction its hold.
      expect(stored.get('p1')?.payload).toEqual({
        messageId: 'p1',
        messageType: '0200',
        SvcCardId: 'c3',
        responseCode: '00',
        decidedBy: 'card',
        transactionId: 'txn_p1',
        transaction: null,
        releasesHold: null,
      });
      expect(stored.get('p2')?.payload).toMatchObject({
        transaction: { SvcAccountId: 'acc3', amount: '7.00', holdId: null },
        releasesHold: null,
      });
      // The binding index builds on the converted log and holds: no reversal can be stored as crediting p1 or p2 again.
      await createCardMessageIndexes(db);
      await expect(db.collection('cardMessages').insertOne({ _id: 'r2' as never, bindingKey: 'reverses:p1' })).rejects.toMatchObject({
        code: 11000,
      });
      await expect(db.collection('cardMessages').insertOne({ _id: 'r3' as never, bindingKey: 'reverses:p2' })).rejects.toMatchObject({
        code: 11000,
      });
    } finally {
      await db.dropDatabase();
      await mongo.close();
    }
  });
});
