// `npm run bench:fanout`: 1,000 concurrent subscribers over graphql-ws, SSE or multipart (`TRANSPORT`; their
// connections in a child process, so the gateway's process holds only the server side) each
// subscribed to card authorizations; events are published on the bus at 50 a second. Reports
// publish-to-receive latency over every (subscriber, event) pair, whether every subscriber received
// every event, and the gateway process's heap per subscriber. Then every subscriber goes away,
// `RESUME_EVENTS` more events are published, and they all come back at once with their last
// position: reports the time until all have caught up, and whether each has every event once.
// Prints JSON.
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
const TRANSPORT = process.env.TRANSPORT === 'sse' || process.env.TRANSPORT === 'multipart' ? process.env.TRANSPORT : 'graphql-ws';
const RESUME_EVENTS = Number(process.env.RESUME_EVENTS ?? 100);

await withOneProcessBench(
  'fan',
  {
    // Every subscriber's socket comes from this machine's one address: no cap by address.
    HTTP_MAX_CONNECTIONS_PER_ADDRESS: '0',
    // Every subscriber is the demo user here, on its own connection: the caps are raised to let them all in.
    WS_MAX_CONNECTIONS_PER_PRINCIPAL: String(SUBSCRIBERS),
    WS_MAX_CONNECTIONS_PER_ADDRESS: String(SUBSCRIBERS),
    WS_MAX_SUBSCRIPTIONS_PER_PRINCIPAL: String(SUBSCRIBERS),
    // Each subscribes twice: live, then resuming.
    WS_SUBSCRIBE_RATE_PER_PRINCIPAL: String(2 * SUBSCRIBERS),
  },
  async ({ config, mongo, demoToken }) => {
    const live = RATE * SECONDS;
    const total = live + RESUME_EVENTS;
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
          url: `${stack.gateway.url}/graphql`,
          token,
          subscribers: SUBSCRIBERS,
          events: live,
          transport: TRANSPORT,
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
    /** Publishes events `from` to `to` at RATE a second. */
    const publish = async (from: number, to: number) => {
      const t0 = performance.now();
      for (let i = from; i < to; i += 1) {
        const due = t0 + ((i - from) * 1000) / RATE;
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
    };
    await publish(0, live);
    worker.send({ type: 'published', published });
    const report = await fromWorker<{ latencies: number[]; received: number; complete: number }>('report');
    const pct = (values: number[], p: number) => {
      const sorted = [...values].sort((a, b) => a - b);
      return Math.round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! * 10) / 10;
    };

    // Every subscriber goes, events are published meanwhile, and all come back at once.
    worker.send({ type: 'disconnect' });
    await fromWorker('disconnected');
    for (let waited = 0; stack.gateway.subscribers() > 0 && waited < 10_000; waited += 50)
      await new Promise((resolve) => setTimeout(resolve, 50));
    await publish(live, total);
    worker.send({ type: 'resume', events: total });
    const resumed = await fromWorker<{ catchUp: number[]; complete: number; repeats: number }>('resumed');
    console.log(
      JSON.stringify(
        {
          scenario: 'subscription fan-out: card authorization events resolved through the gateway for each subscriber',
          subscribers: SUBSCRIBERS,
          eventsPerSecond: RATE,
          events: total,
          transport: TRANSPORT,
          deliveries: { expected: SUBSCRIBERS * live, received: report.received, subscribersWithEveryEvent: report.complete },
          publishToReceiveMs: {
            p50: pct(report.latencies, 50),
            p90: pct(report.latencies, 90),
            p99: pct(report.latencies, 99),
            max: pct(report.latencies, 100),
          },
          targetP99Ms: 250,
          gatewayHeapPerSubscriberKiB: Math.round(((heapWithSubscribers - heapBefore) / SUBSCRIBERS / 1024) * 10) / 10,
          resumedAtOnce: {
            subscribers: SUBSCRIBERS,
            eventsMissedEach: RESUME_EVENTS,
            subscribersWithEveryEventOnce: resumed.repeats === 0 ? resumed.complete : 0,
            repeats: resumed.repeats,
            catchUpMs: { p50: pct(resumed.catchUp, 50), p99: pct(resumed.catchUp, 99), untilAll: pct(resumed.catchUp, 100) },
          },
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
