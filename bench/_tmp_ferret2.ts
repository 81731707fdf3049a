import { MongoClient } from 'mongodb';
const client = new MongoClient(process.argv[2]!, { maxPoolSize: 20 });
const c = client.db('t').collection<{ _id: string; v: number; s: string }>('c');
await c.deleteMany({});
for (let i = 0; i < 1000; i++) await c.insertOne({ _id: `k${i}`, v: i, s: 'x'.repeat(200) });
async function run(name: string, op: (i: number) => Promise<unknown>) {
  let n = 0; const end = Date.now() + 10000;
  await Promise.all(Array.from({ length: 20 }, async (_, w) => { while (Date.now() < end) { await op(n * 20 + w); n++; } }));
  console.log(name, Math.round(n / 10), 'ops/s');
}
await run('updateOne _id', (i) => c.updateOne({ _id: `k${i % 1000}` }, { $set: { v: i } }));
await client.close();
