// `npm run bench:fanout`: 1,000 concurrent graphql-ws subscribers (their sockets in a child
// process, so the gateway's process holds only the server side) each subscribed to card authorizations; events
// are published on the bus at 50 a second. Reports publish-to-receive latency over every
// (subscriber, event) pair, whether every subscriber received every event, and the gateway
// process's heap per subscriber. Prints JSON.
import { cpus } from 'node:os';
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { DEMO } from '../platform/domain/demo.js';
import { createLogger } from '../platform/runtime/logger.js';
import { startStack } from '../scripts/stack.js';
import { withOneProcessBench } from './one-process.js';

const SUBSCRIBERS = Number(process.env.SUBSCRIBERS ?? 1000);
const RATE = Number(process.env.RATE ?? 50);
const SECONDS = Number(process.env.SECONDS ?? 10);

await withOneProcessBench(
  'fan',
  {
    // Every subscriber's socket comes from this machine's one address: no cap by address.
    HTTP_MAX_CONNECTIONS_PER_ADDRESS: '0',
    // Every subscriber is the demo user here, on its own connection: the caps are raised to let them all in.
    WS_MAX_CONNECTIONS_PER_PRINCIPAL: String(SUBSCRIBERS),
    WS_MAX_CONNECTIONS_PER_ADDRESS: String(SUBSCRIBERS),
    WS_MAX_SUBSCRIPTIONS_PER_PRINCIPAL: String(SUBSCRIBERS),
    WS_SUBSCRIBE_RATE_PER_PRINCIPAL: String(SUBSCRIBERS),
  },
  async ({ config, mongo, demoToken }) => {
    const total = RATE * SECONDS;
    // The decided messages the events announce (as the authorization engine would have stored them).
    const now = new Date();
    const messages = Array.from({ length: total }, (_, i) => ({
      _id: `bench_msg_${i}`,
      state: 'decided',
      holdId: null,
      messageType: '0100',
      actionType: 'request',
      SvcCardId: DEMO.cardIds[0],
      SvcUserId: DEMO.userId,
      svcAggregatorId: DEMO.aggregatorId,
      amount: 1 + (i % 50),
      currency: 'USD',
      stan: String(i).padStart(6, '0'),
      rrn: `F${String(i).padStart(11, '0')}`,
      originalStan: null,
      responseCode: '00',
      decidedBy: 'aggregator',
      reason: 'approved',
      transactionId: null,
      decisionMs: 1,
      dtsReceived: now,
      // Each is its own outbox event, published already: the bench publishes the events itself.
      type: 'card.authorization',
      audience: { SvcUserId: DEMO.userId, svcAggregatorId: DEMO.aggregatorId },
      payload: { messageId: `bench_msg_${i}` },
      dtsCreated: now,
      dtsPublished: now,
    }));
    for (let i = 0; i < messages.length; i += 50)
      await mongo
        .db('cards')
        .collection('cardMessages')
        .insertMany(messages.slice(i, i + 50) as never[]);
    const stack = await startStack(config, createLogger('error'), mongo);
    const token = await demoToken();

    global.gc?.();
    const heapBefore = process.memoryUsage().heapUsed;
    const worker = fork(fileURLToPath(new URL('./fanout-clients.ts', import.meta.url)), [], {
      execArgv: ['--import', 'tsx'],
      env: {
        ...process.env,
        FANOUT: JSON.stringify({
          url: `${stack.gateway.url.replace('http', 'ws')}/graphql`,
          token,
          subscribers: SUBSCRIBERS,
          events: total,
        }),
      },
    });
    const fromWorker = <T>(type: string) =>
      new Promise<T>((resolve, reject) => {
        const onMessage = (message: { type: string } & T) => {
          if (message.type === type) {
            worker.off('message', onMessage as (message: unknown) => void);
            resolve(message);
          }
        };
        worker.on('message', onMessage as (message: unknown) => void);
        worker.once('error', reject);
      });
    worker.on('message', (message: { type: string; error?: string }) => {
      if (message.type === 'error') process.stderr.write(`subscriber error: ${message.error}\n`);
    });
    await fromWorker('subscribed');
    // Let every subscription register at the gateway.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    global.gc?.();
    const heapWithSubscribers = process.memoryUsage().heapUsed;

    const published = new Array<number>(total);
    const t0 = performance.now();
    for (let i = 0; i < total; i += 1) {
      const due = t0 + (i * 1000) / RATE;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      published[i] = performance.timeOrigin + performance.now();
      await stack.bus.publish({
        id: `bench_evt_${i}`,
        type: 'card.authorization',
        audience: { SvcUserId: DEMO.userId, svcAggregatorId: DEMO.aggregatorId },
        payload: { messageId: `bench_msg_${i}` },
        dtsCreated: new Date().toISOString(),
      });
    }
    worker.send({ type: 'published', published });
    const report = await fromWorker<{ latencies: number[]; received: number; complete: number }>('report');
    const sorted = report.latencies.sort((a, b) => a - b);
    const pct = (p: number) => Math.round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! * 10) / 10;
    console.log(
      JSON.stringify(
        {
          scenario: 'subscription fan-out: card authorization events resolved through the gateway for each subscriber',
          subscribers: SUBSCRIBERS,
          eventsPerSecond: RATE,
          events: total,
          deliveries: { expected: SUBSCRIBERS * total, received: report.received, subscribersWithEveryEvent: report.complete },
          publishToReceiveMs: { p50: pct(50), p90: pct(90), p99: pct(99), max: pct(100) },
          targetP99Ms: 250,
          gatewayHeapPerSubscriberKiB: Math.round(((heapWithSubscribers - heapBefore) / SUBSCRIBERS / 1024) * 10) / 10,
          bus: config.redisUrl ? 'redis' : 'in-process',
          machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version },
        },
        null,
        2,
      ),
    );
    worker.kill();
    await stack.stop();
  },
);
