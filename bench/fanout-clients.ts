// The subscribers of `bench/subscription-fanout.ts`, in a child process: one graphql-ws client
// (one WebSocket) each, recording when each event arrives.
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';

const { url, token, subscribers, events } = JSON.parse(process.env.FANOUT!) as {
  url: string;
  token: string;
  subscribers: number;
  events: number;
};
const report = (message: Record<string, unknown>) => process.send!(message);
const arrivals: Array<Map<number, number>> = [];
let ready = 0;

for (let s = 0; s < subscribers; s += 1) {
  const seen = new Map<number, number>();
  arrivals.push(seen);
  const client = createClient({ url, webSocketImpl: WebSocket, connectionParams: { token }, retryAttempts: 0 });
  client.on('closed', (event) =>
    report({ type: 'error', error: `closed ${(event as { code?: number }).code ?? ''} ${(event as { reason?: string }).reason ?? ''}` }),
  );
  client.on('connected', () => {
    ready += 1;
    if (ready === subscribers) report({ type: 'subscribed' });
  });
  client.subscribe<{ cardAuthorizations: { messageId: string } }>(
    { query: 'subscription { cardAuthorizations { messageId } }' },
    {
      next: ({ data }) => {
        const index = Number(data?.cardAuthorizations.messageId.slice('bench_msg_'.length));
        seen.set(index, performance.timeOrigin + performance.now());
      },
      error: (error) => report({ type: 'error', error: String(error) }),
      complete: () => {},
    },
  );
}

/** Reports each subscriber's latencies once the parent has published every event. */
async function onPublished(message: { type: string; published: number[] }): Promise<void> {
  if (message.type !== 'published') return;
  // Wait until every subscriber has every event, or 10 s after the last publish.
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline && arrivals.some((seen) => seen.size < events)) await new Promise((resolve) => setTimeout(resolve, 50));
  const latencies: number[] = [];
  let received = 0;
  for (const seen of arrivals) {
    for (const [index, at] of seen) {
      latencies.push(at - message.published[index]!);
      received += 1;
    }
  }
  report({ type: 'report', latencies, received, complete: arrivals.filter((seen) => seen.size === events).length });
}

process.on('message', (message: { type: string; published: number[] }) => void onPublished(message));
