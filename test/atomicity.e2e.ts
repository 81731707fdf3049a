import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { connectMongo, type Mongo } from '../platform/mongo.js';

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
    const claims = await Promise.all(Array.from({ length: 50 }, (_, i) => states.findOneAndUpdate({ _id: 'thing', status: 'open' }, { $set: { status: 'taken', owner: i } })));
    expect(claims.filter(Boolean)).toHaveLength(1);
  });

  it('lose no increment of a hundred concurrent ones', async () => {
    const counters = mongo.db('user').collection<{ _id: string; n: number }>('counters');
    await counters.insertOne({ _id: 'c', n: 0 });
    await Promise.all(Array.from({ length: 100 }, () => counters.updateOne({ _id: 'c' }, { $inc: { n: 1 } })));
    expect((await counters.findOne({ _id: 'c' }))?.n).toBe(100);
  });
});
