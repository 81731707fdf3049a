import type { CommandStartedEvent } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { connectMongo, type Mongo } from '../../platform/mongo/mongo.js';

describe('conditional updates on the configured database', () => {
  let mongo: Mongo;
  beforeAll(async () => {
    mongo = await connectMongo(inject('mongodbUri'), `atomic_${process.pid}_`);
  });
  afterAll(async () => {
    await mongo.db('user').dropDatabase();
    await mongo.close();
  });

  it('let exactly one of fifty racing claims of the same state win', async () => {
    const states = mongo.db('user').collection<{ _id: string; status: string; owner: number | null }>('states');
    await states.insertOne({ _id: 'thing', status: 'open', owner: null });
    const claims = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        states.findOneAndUpdate({ _id: 'thing', status: 'open' }, { $set: { status: 'taken', owner: i } }),
      ),
    );
    expect(claims.filter(Boolean)).toHaveLength(1);
  });

  it('lose no increment of a hundred concurrent ones', async () => {
    const counters = mongo.db('user').collection<{ _id: string; n: number }>('counters');
    await counters.insertOne({ _id: 'c', n: 0 });
    const connections = new Set<number | string>();
    const onStarted = (event: CommandStartedEvent) => {
      if (event.commandName === 'update') connections.add(event.connectionId ?? 'none');
    };
    mongo.db('user').client.on('commandStarted', onStarted);
    try {
      await Promise.all(Array.from({ length: 100 }, () => counters.updateOne({ _id: 'c' }, { $inc: { n: 1 } })));
    } finally {
      mongo.db('user').client.off('commandStarted', onStarted);
    }
    expect((await counters.findOne({ _id: 'c' }))?.n).toBe(100);
    // Atomic because the server makes it so, not because this process sent one command at a time.
    if (!mongo.serialized) expect(connections.size).toBeGreaterThan(1);
  });

  it('let a conditional delete and a conditional replace of the same document never both succeed', async () => {
    const claims = mongo.db('user').collection<{ _id: string; state: 'pending' | 'decided' }>('claims');
    const ids = Array.from({ length: 40 }, (_, i) => `claim_${i}`);
    await claims.insertMany(ids.map((_id) => ({ _id, state: 'pending' as const })));
    const outcomes = await Promise.all(
      ids.map(async (_id) => {
        const [replaced, deleted] = await Promise.all([
          claims.replaceOne({ _id, state: 'pending' }, { state: 'decided' }),
          claims.deleteOne({ _id, state: 'pending' }),
        ]);
        return { _id, replaced: replaced.modifiedCount, deleted: deleted.deletedCount, stored: await claims.findOne({ _id }) };
      }),
    );
    for (const outcome of outcomes) {
      expect(outcome.replaced + outcome.deleted, outcome._id).toBe(1);
      expect(outcome.stored?.state ?? 'deleted').toBe(outcome.replaced ? 'decided' : 'deleted');
    }
  });

  // A FerretDB of the user's own (FERRETDB_BIN, MONGODB_URI) may lack the patch; then commands are serialized.
  it.skipIf(Boolean(process.env.MONGODB_URI || process.env.FERRETDB_BIN))(
    'are served by one pooled client on the embedded database, which makes its writes atomic itself',
    () => {
      expect(mongo.serialized).toBe(false);
    },
  );
});
