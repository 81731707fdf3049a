import fc from 'fast-check';
import { ObjectId, type Collection, type Document, type Filter } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { connectMongo, type Mongo } from '../../platform/mongo/mongo.js';

// The embedded FerretDB is built with platform/mongo/ferretdb-patches/equality-pushdown.patch, which
// narrows a query in SQL by its top-level equalities before FerretDB's own matcher runs. A filter
// wrapped in `$and` is never narrowed, so the two spellings of one filter must return the same
// documents: FerretDB's matcher is the oracle. On MongoDB (MONGODB_URI) the same holds trivially.

type Sample = { _id: string; a?: unknown; b?: unknown; n?: number; oid?: unknown; ROWID?: unknown; _ferretdb_sjson?: unknown };
// Field names SQLite could read as a column of the table (row id aliases, FerretDB's own columns).
const COLUMN_LIKE = ['oid', 'ROWID', '_ferretdb_sjson'] as const;
const OBJECT_IDS = ['65a1b2c3d4e5f60718293a4b', '65a1b2c3d4e5f60718293a4c'].map((hex) => new ObjectId(hex));

const scalar = fc.oneof(
  fc.constantFrom('x', 'y', '<&>', 'é', '"q"', '[', '\\', '', '65a1b2c3d4e5f60718293a4b', 'a\uFFFD'),
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom(0, 1, 1.5),
  fc.constantFrom(...OBJECT_IDS),
);
const value = fc.oneof(scalar, fc.array(scalar, { maxLength: 3 }), fc.record({ x: scalar }));
const sample = (i: number) =>
  fc
    .record({ a: value, b: value, oid: value, ROWID: value, _ferretdb_sjson: value }, { requiredKeys: [] })
    .map((fields): Sample => ({ _id: `d${i}`, ...fields }));
const queryValue = fc.oneof(
  fc.constantFrom('x', 'y', '<&>', 'é', '"q"', '[', '\\', '', '65a1b2c3d4e5f60718293a4b', 'a\uFFFD'),
  fc.boolean(),
  fc.constant(null),
  fc.constant(1),
  fc.constantFrom(...OBJECT_IDS),
);
const condition = fc.oneof(
  queryValue,
  queryValue.map((v) => ({ $eq: v })),
  fc.array(queryValue, { minLength: 1, maxLength: 4 }).map((list) => ({ $in: list })),
);
const idCondition = fc.oneof(
  fc.nat(40).map((i) => `d${i}`),
  fc
    .array(
      fc.nat(40).map((i) => `d${i}`),
      { minLength: 1, maxLength: 5 },
    )
    .map((list) => ({ $in: list })),
);
// Mostly one field (a filter of several rarely matches anything, and would test little).
const filter = fc.oneof(
  { weight: 3, arbitrary: fc.tuple(fc.constantFrom('a', 'b', ...COLUMN_LIKE), condition).map(([field, test]) => ({ [field]: test })) },
  {
    weight: 1,
    arbitrary: fc.record(
      { _id: idCondition, a: condition, b: condition, oid: condition, ROWID: condition, _ferretdb_sjson: condition },
      { requiredKeys: [] },
    ),
  },
);

describe('the embedded database narrows queries by their equalities without losing a match', () => {
  let mongo: Mongo;
  let samples: Collection<Sample>;
  const ids = (docs: Document[]) => docs.map((d) => String(d._id)).sort();

  beforeAll(async () => {
    mongo = await connectMongo(inject('mongodbUri'), `pushdown_${process.pid}_`);
    samples = mongo.db('user').collection<Sample>('samples');
    await samples.createIndex({ a: 1 });
    const docs = fc.sample(fc.tuple(...Array.from({ length: 40 }, (_, i) => sample(i))), { numRuns: 1, seed: 7 })[0]!;
    await samples.insertMany(docs);
  });
  afterAll(async () => {
    await mongo.db('user').dropDatabase();
    await mongo.close();
  });

  it('returns the same documents for a filter as for the same filter inside $and', async () => {
    await fc.assert(
      fc.asyncProperty(filter, async (query) => {
        const narrowed = ids(await samples.find(query as Document).toArray());
        const whole = ids(await samples.find({ $and: [query as Document] }).toArray());
        expect(narrowed).toEqual(whole);
      }),
      { numRuns: 300, seed: 11 },
    );
  });

  it('reads an equality on an indexed field, or on _id among other conditions, through the index', async (context) => {
    const plan = async (query: Document) =>
      (await mongo.db('user').command({ explain: { find: 'samples', filter: query } })) as {
        serverInfo?: { ferretdbVersion?: string };
        queryPlanner: { Plan?: string[] };
      };
    const probe = await plan({ a: 'x' });
    if (!probe.serverInfo?.ferretdbVersion) context.skip(); // MongoDB plans its own way
    expect(probe.queryPlanner.Plan!.join('\n')).toMatch(/USING INDEX \S+_a_1 /);
    expect((await plan({ _id: 'd3', b: 'x' })).queryPlanner.Plan!.join('\n')).toMatch(/USING INDEX \S+__id_ /);
    expect((await plan({ _id: { $in: ['d1', 'd2'] } })).queryPlanner.Plan!.join('\n')).toMatch(/USING INDEX \S+__id_ /);
    // An equality on a number is left to FerretDB's matcher: its JSON text does not decide equality (1 = 1.0).
    expect((await plan({ n: 1 })).queryPlanner.Plan!.join('\n')).toMatch(/detail=SCAN /);
  });

  it('finds, updates and deletes by _id of every kind, and by field names SQLite could read as columns', async () => {
    const kinds = mongo.db('user').collection('id_kinds');
    const ids: unknown[] = ['s', 7, 7.5, OBJECT_IDS[0], { nested: 'doc' }, true];
    await kinds.insertMany(ids.map((_id, v): Document => ({ _id, v, oid: `o${v}` })));
    for (const [v, _id] of ids.entries()) {
      const label = JSON.stringify(_id);
      expect((await kinds.findOne({ _id, v } as Filter<Document>))?.v, label).toBe(v);
      expect((await kinds.updateOne({ _id } as Filter<Document>, { $set: { v: v + 100 } })).modifiedCount, label).toBe(1);
      expect(await kinds.countDocuments({ oid: `o${v}`, v: v + 100 })).toBe(1);
      expect((await kinds.deleteOne({ _id, oid: `o${v}` } as Filter<Document>)).deletedCount, label).toBe(1);
    }
    expect(await kinds.countDocuments({})).toBe(0);
  });

  it('finds a value inside an array, a missing field by null, and strings that need escaping', async () => {
    await samples.insertMany([
      { _id: 'arr', a: ['p', 'q'] },
      { _id: 'missing', b: 'only b' },
      { _id: 'nul', a: null },
      { _id: 'esc', a: 'a "quoted" <tag> & \\ é' },
    ]);
    expect(ids(await samples.find({ a: 'q' }).toArray())).toEqual(['arr']);
    expect(ids(await samples.find({ _id: { $in: ['missing', 'nul', 'arr'] }, a: null }).toArray())).toEqual(['missing', 'nul']);
    expect(ids(await samples.find({ a: 'a "quoted" <tag> & \\ é' }).toArray())).toEqual(['esc']);
    expect(await samples.findOneAndUpdate({ _id: 'arr', a: 'zzz' }, { $set: { b: 1 } })).toBeNull();
    expect((await samples.findOneAndUpdate({ _id: 'arr', a: 'p' }, { $set: { b: 1 } }))?._id).toBe('arr');
    expect((await samples.deleteMany({ _id: { $in: ['arr', 'esc'] }, a: 'p' })).deletedCount).toBe(1);
  });
});
