// `npm run bench:restarts [-- <rounds> [--unguarded]]`: a driver client under load (8 writers and
// readers) while the embedded FerretDB is stopped and started on its port, round after round; each
// round, how long until the client answers again. Stops at the first round it does not within
// 20 s, printing the server monitor's events. `--unguarded` leaves out platform/mongo/driver-guard.ts
// (see docs/rest-contract.md: without it the client got stuck after 4 to 12 restarts).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MongoClient } from 'mongodb';
import { guardDriverWrites } from '../platform/mongo/driver-guard.js';
import { freePort, startEmbeddedMongo } from '../platform/mongo/ferretdb.js';

const ROUNDS = Number(process.argv.slice(2).find((arg) => /^\d+$/.test(arg)) ?? 40);
if (!process.argv.includes('--unguarded')) guardDriverWrites();

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const dataDir = await mkdtemp(path.join(tmpdir(), 'banking-restarts-'));
const port = await freePort();
let database = await startEmbeddedMongo({ dataDir, port });
const client = new MongoClient(database.uri, { serverSelectionTimeoutMS: 10_000 });
await client.connect();

const started = Date.now();
const events: string[] = [];
const note = (event: string) => events.push(`${Date.now() - started} ms ${event}`);
client.on('serverHeartbeatStarted', () => note('heartbeat started'));
client.on('serverHeartbeatSucceeded', () => note('heartbeat succeeded'));
client.on('serverHeartbeatFailed', (event) => note(`heartbeat failed: ${event.failure.message}`));
client.on('serverDescriptionChanged', (event) => note(`server ${event.previousDescription.type} -> ${event.newDescription.type}`));

const records = client.db('restarts').collection<{ _id: string; n: number }>('records');
let running = true;
let answered = 0;
let failed = 0;
const workers = Array.from({ length: 8 }, async (_, worker) => {
  for (let i = 0; running; i += 1) {
    try {
      const _id = `${worker}-${i}-${Date.now()}`;
      await records.insertOne({ _id, n: i });
      await records.findOne({ _id });
      answered += 1;
    } catch {
      failed += 1;
    }
    await sleep(5);
  }
});

let stuck = false;
for (let round = 1; round <= ROUNDS && !stuck; round += 1) {
  events.length = 0;
  await sleep(1000 + Math.random() * 1000);
  note('stopping the database');
  await database.stop();
  await sleep(Math.random() * 3000);
  note('starting the database');
  database = await startEmbeddedMongo({ dataDir, port });
  const restarted = Date.now();
  let recovered = false;
  while (!recovered && Date.now() - restarted < 20_000) {
    recovered = await client
      .db('admin')
      .command({ ping: 1 })
      .then(
        () => true,
        () => false,
      );
    if (!recovered) await sleep(200);
  }
  console.log(
    `round ${round}: ${recovered ? `answering again ${Date.now() - restarted} ms after the restart` : 'not answering 20 s after the restart'} (operations answered ${answered}, failed ${failed})`,
  );
  if (!recovered) {
    stuck = true;
    console.log(events.join('\n'));
  }
}
running = false;
await client.close(true);
// A stuck client's workers may never settle (the hang this reproduces): they are not waited for then.
if (!stuck) await Promise.allSettled(workers);
await database.stop();
await rm(dataDir, { recursive: true, force: true });
process.exit(stuck ? 1 : 0);
