import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedMongo, type EmbeddedMongo } from '../../platform/mongo/ferretdb.js';

// The embedded FerretDB is built with platform/mongo/ferretdb-patches/wal-checkpoints.patch: SQLite's
// automatic checkpoint (run by the commit that crosses 1,000 WAL pages) waits until 16,384, and a
// goroutine per database copies the WAL into the database file every 100 ms. It runs SQLite with
// synchronous=NORMAL (commits are not synced one by one). This file starts an embedded FerretDB of
// its own, to look at its files and to kill it. A FERRETDB_BIN of the user's own may lack the patch.
describe.skipIf(Boolean(process.env.FERRETDB_BIN))('the embedded database write-ahead log', () => {
  let dataDir: string;
  let embedded: EmbeddedMongo;
  let client: MongoClient;
  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'banking-graph-wal-'));
    embedded = await startEmbeddedMongo({ dataDir });
    client = new MongoClient(embedded.uri);
  });
  afterAll(async () => {
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- beforeAll may have failed before assigning it.
    await client?.close();
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- beforeAll may have failed before assigning it.
    await embedded?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('keeps every acknowledged write when FerretDB is killed before any checkpoint', async () => {
    const documents = client.db('wal').collection<{ _id: string; n: number }>('killed');
    for (let i = 0; i < 300; i += 1) await documents.insertOne({ _id: `k${i}`, n: i });
    // At once, inside the 100 ms between checkpoints: the last writes are only in the WAL, not synced.
    process.kill(embedded.pid!, 'SIGKILL');
    await embedded.stop();
    await client.close();
    embedded = await startEmbeddedMongo({ dataDir, port: Number(new URL(embedded.uri).port) });
    client = new MongoClient(embedded.uri);
    const reopened = client.db('wal').collection<{ _id: string; n: number }>('killed');
    expect(await reopened.countDocuments()).toBe(300);
    expect((await reopened.findOne({ _id: 'k299' }))?.n).toBe(299);
  });

  it('is copied into the database file shortly after writes stop, well before it reaches a thousand pages', async () => {
    const documents = client.db('wal').collection<{ _id: string; body: string }>('documents');
    // About 1 MiB in all: a quarter of the upstream threshold, so without the patch nothing would be checkpointed.
    await documents.insertMany(Array.from({ length: 400 }, (_, i) => ({ _id: `d${i}`, body: String(i).padEnd(2500, '.') })));
    const file = path.join(dataDir, 'wal.sqlite');
    const deadline = Date.now() + 5000;
    while ((await stat(file)).size < 1_000_000 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await stat(file)).size).toBeGreaterThan(1_000_000);
    expect(await documents.countDocuments()).toBe(400);
    expect((await documents.findOne({ _id: 'd399' }))?.body.startsWith('399.')).toBe(true);
  });

  it('starts over after each pause in the writes instead of growing', { timeout: 120_000 }, async () => {
    const documents = client.db('wal').collection<{ _id: string; n: number; body: string }>('bursts');
    await documents.insertMany(Array.from({ length: 100 }, (_, i) => ({ _id: `s${i}`, n: 0, body: ''.padEnd(2500, '.') })));
    // Eight bursts of a thousand updates, twenty at a time, each burst followed by a pause long
    // enough for a checkpoint of it on a busy machine: about 70 MiB of WAL frames in all, which
    // without the checkpointing goroutine stay in the WAL until SQLite's own checkpoint at 64 MiB.
    const bursts = 8;
    const perBurst = 1000;
    for (let burst = 0; burst < bursts; burst += 1) {
      let sent = 0;
      await Promise.all(
        Array.from({ length: 20 }, async () => {
          while (sent < perBurst) {
            sent += 1;
            await documents.updateOne({ _id: `s${sent % 100}` }, { $inc: { n: 1 } });
          }
        }),
      );
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    const wal = (await stat(path.join(dataDir, 'wal.sqlite-wal'))).size;
    expect(wal).toBeLessThan(24 * 1024 * 1024);
    const total = await documents.aggregate<{ n: number }>([{ $group: { _id: null, n: { $sum: '$n' } } }]).toArray();
    expect(total[0]?.n).toBe(bursts * perBurst);
  });
});
