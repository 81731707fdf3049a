// The subscribers of `bench/subscription-fanout.ts`, in a child process: one graphql-ws client
// (one WebSocket), one graphql-sse client or one multipart reader (one HTTP stream) each, recording when each event
// arrives and the last position it received; on `disconnect` they all go, and on `resume` they all
// come back at once with their last position and record when each has caught up.
import { createClient as createSseClient } from 'graphql-sse';
import { createClient as createWsClient } from 'graphql-ws';
import WebSocket from 'ws';

const { url, token, subscribers, events, transport } = JSON.parse(process.env.FANOUT!) as {
  url: string;
  token: string;
  subscribers: number;
  events: number;
  transport: 'graphql-ws' | 'sse' | 'multipart';
};
const QUERY = 'subscription { cardAuthorizations { messageId } }';
const report = (message: Record<string, unknown>) => process.send!(message);

interface Result {
  data?: { cardAuthorizations: { messageId: string } } | null;
  extensions?: { position?: string; caughtUp?: { replayed: number } };
}
/** One subscriber: when each event arrived (by index), how many times, its last position, when it caught up. */
interface Subscriber {
  seen: Map<number, number>;
  repeats: number;
  last: string | null;
  caughtUpAt: number | null;
  stop: () => void;
}

const clients: Subscriber[] = [];
/** The events each subscriber has once caught up, from the resumption on. */
let resumedTotal: number | null = null;
let ready = 0;

function subscribe(subscriber: Subscriber, after: string | null, onConnected: () => void): void {
  const next = (result: Result) => {
    if (result.extensions?.position) subscriber.last = result.extensions.position;
    if (result.extensions?.caughtUp) subscriber.caughtUpAt = performance.timeOrigin + performance.now();
    const id = result.data?.cardAuthorizations.messageId;
    if (id === undefined) return;
    const index = Number(id.slice('bench_msg_'.length));
    if (subscriber.seen.has(index)) subscriber.repeats += 1;
    else subscriber.seen.set(index, performance.timeOrigin + performance.now());
    // Multipart sends no caught-up result: it has caught up once it has every event.
    if (transport === 'multipart' && resumedTotal !== null && subscriber.seen.size === resumedTotal)
      subscriber.caughtUpAt = performance.timeOrigin + performance.now();
  };
  const sink = {
    next,
    error: (error: unknown) => report({ type: 'error', error: JSON.stringify(error, ['message', 'code', 'reason', 'extensions']) }),
    complete: () => {},
  };
  if (transport === 'multipart') {
    // Apollo's multipart protocol read as it arrives: each part's JSON is `{"payload": result}`, `{}` a heartbeat.
    const controller = new AbortController();
    void (async () => {
      try {
        const response = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'multipart/mixed;boundary=graphql;subscriptionSpec=1.0', token },
          body: JSON.stringify({ query: QUERY, ...(after ? { extensions: { after } } : {}) }),
          signal: controller.signal,
        });
        onConnected();
        const reader = (response.body as ReadableStream<Uint8Array>).getReader();
        const decoder = new TextDecoder();
        let buffer = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += decoder.decode(value, { stream: true });
          for (let end = buffer.indexOf('\r\n--graphql'); end >= 0; end = buffer.indexOf('\r\n--graphql')) {
            const part = buffer.slice(0, end);
            buffer = buffer.slice(end + '\r\n--graphql'.length);
            const json = part.slice(part.indexOf('\r\n\r\n') + 4);
            if (json.startsWith('{"payload"')) next((JSON.parse(json) as { payload: Result }).payload);
          }
        }
      } catch (error) {
        if (!controller.signal.aborted) report({ type: 'error', error: String(error) });
      }
    })();
    subscriber.stop = () => controller.abort();
    return;
  }
  if (transport === 'sse') {
    const client = createSseClient({
      url,
      headers: () => ({ token, ...(after ? { 'last-event-id': after } : {}) }),
      retryAttempts: 0,
      on: { connected: onConnected },
    });
    const unsubscribe = client.subscribe({ query: QUERY }, sink);
    subscriber.stop = () => {
      unsubscribe();
      client.dispose();
    };
    return;
  }
  const client = createWsClient({
    url: url.replace('http', 'ws'),
    webSocketImpl: WebSocket,
    connectionParams: { token },
    retryAttempts: 0,
  });
  client.on('connected', onConnected);
  const unsubscribe = client.subscribe({ query: QUERY, ...(after ? { extensions: { after } } : {}) }, sink);
  subscriber.stop = () => {
    unsubscribe();
    void client.dispose();
  };
}

for (let s = 0; s < subscribers; s += 1) {
  const subscriber: Subscriber = { seen: new Map(), repeats: 0, last: null, caughtUpAt: null, stop: () => {} };
  clients.push(subscriber);
  subscribe(subscriber, null, () => {
    ready += 1;
    if (ready === subscribers) report({ type: 'subscribed' });
  });
}

/** Waits until every subscriber has `count` events or caught up, or `ms` pass. */
async function settle(done: (subscriber: Subscriber) => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline && clients.some((subscriber) => !done(subscriber))) await new Promise((resolve) => setTimeout(resolve, 50));
}

process.on('message', (message: { type: string; published?: number[]; events?: number; at?: number }) => {
  void (async () => {
    if (message.type === 'published') {
      // Every subscriber has every event, or 10 s after the last publish.
      await settle((subscriber) => subscriber.seen.size >= events, 10_000);
      const latencies: number[] = [];
      let received = 0;
      for (const { seen } of clients) {
        for (const [index, at] of seen) {
          latencies.push(at - message.published![index]!);
          received += 1;
        }
      }
      report({ type: 'report', latencies, received, complete: clients.filter(({ seen }) => seen.size === events).length });
    } else if (message.type === 'disconnect') {
      for (const subscriber of clients) subscriber.stop();
      report({ type: 'disconnected' });
    } else if (message.type === 'resume') {
      const total = message.events!;
      resumedTotal = total;
      const resumedAt = performance.timeOrigin + performance.now();
      for (const subscriber of clients) subscribe(subscriber, subscriber.last, () => {});
      await settle((subscriber) => subscriber.caughtUpAt !== null, 60_000);
      const catchUp = clients.map((subscriber) => (subscriber.caughtUpAt ?? Infinity) - resumedAt);
      report({
        type: 'resumed',
        catchUp,
        complete: clients.filter(({ seen }) => seen.size === total).length,
        repeats: clients.reduce((sum, subscriber) => sum + subscriber.repeats, 0),
      });
    }
  })();
});
