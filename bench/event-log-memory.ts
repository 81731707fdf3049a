// `npm run bench:event-log`: what the event log holds in Redis at its default retention when
// events arrive at 200 a second. The length bound (EVENT_RETENTION_EVENTS) is what binds at that
// rate (an hour would be 720,000 events), so the stream holds that many; the duplicate window holds
// an id key for each event of its last ten minutes. Appends card-authorization events of the size
// the cards subgraph publishes to a stream of its own on REDIS_URL (default the local one),
// measures the stream (MEMORY USAGE) and Redis's memory before and after, then deletes what it wrote.
// Prints JSON.
import { Redis } from 'ioredis';
import { RedisBus } from '../platform/messaging/event-bus.js';
import { createLogger } from '../platform/runtime/logger.js';
import { loadConfig } from '../platform/runtime/config.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const RATE = 200;
const { eventRetention } = loadConfig({ ...process.env, REDIS_URL });
const stream = `bench-event-log-${process.pid}`;
const admin = new Redis(REDIS_URL);
const bus = new RedisBus(REDIS_URL, createLogger('error'), stream, eventRetention);
const events = Math.min(eventRetention.events, RATE * eventRetention.seconds);
const idsKept = RATE * Math.min(eventRetention.seconds, 600);

const usedMemory = async () => Number(/used_memory:(\d+)/.exec(await admin.info('memory'))?.[1] ?? 0);
const before = await usedMemory();
let next = 0;
const started = performance.now();
await Promise.all(
  Array.from({ length: 32 }, async () => {
    for (let i = next++; i < events; i = next++) {
      await bus.publish({
        id: `evt_${String(i).padStart(24, '0')}`,
        type: 'card.authorization',
        audience: { SvcUserId: `user_${i % 5000}`, svcAggregatorId: 'aggregator_1' },
        payload: {
          messageId: `msg_${String(i).padStart(20, '0')}`,
          messageType: '0100',
          SvcCardId: `card_${i % 20000}`,
          responseCode: i % 7 === 0 ? '51' : '00',
          decidedBy: 'aggregator',
          transactionId: null,
          transaction: null,
          releasesHold: null,
        },
        dtsCreated: new Date().toISOString(),
      });
    }
  }),
);
const appendSeconds = (performance.now() - started) / 1000;
const after = await usedMemory();
const streamBytes = Number(await admin.call('MEMORY', 'USAGE', stream, 'SAMPLES', '0'));
const length = await admin.xlen(stream);
// The duplicate window keeps one key per event it saw; at this rate it would hold `idsKept`.
let idKeys = 0;
for (let cursor = '0'; ;) {
  const [nextCursor, keys] = await admin.scan(cursor, 'MATCH', `${stream}:id:*`, 'COUNT', 10_000);
  idKeys += keys.length;
  cursor = nextCursor;
  if (cursor === '0') break;
}
const idBytes = Math.max(0, after - before - streamBytes) / Math.max(1, idKeys);
console.log(
  JSON.stringify(
    {
      scenario: `the event log at ${RATE} events/s with retention ${eventRetention.seconds} s and at most ${eventRetention.events} events`,
      appended: events,
      appendPerSecond: Math.round(events / appendSeconds),
      stream: { entries: length, bytes: streamBytes, bytesPerEvent: Math.round(streamBytes / length) },
      duplicateWindow: {
        keysNow: idKeys,
        keysAtRate: idsKept,
        bytesPerKey: Math.round(idBytes),
        bytesAtRate: Math.round(idBytes * idsKept),
      },
      totalMiBAtRate: Math.round(((streamBytes + idBytes * idsKept) / 1024 / 1024) * 10) / 10,
    },
    null,
    2,
  ),
);
await bus.close();
for (let cursor = '0'; ;) {
  const [nextCursor, keys] = await admin.scan(cursor, 'MATCH', `${stream}*`, 'COUNT', 10_000);
  if (keys.length > 0) await admin.del(...keys);
  cursor = nextCursor;
  if (cursor === '0') break;
}
admin.disconnect();
