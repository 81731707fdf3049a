import { ApolloClient, HttpLink, InMemoryCache, gql } from '@apollo/client';
import { createClient as createSseClient } from 'graphql-sse';
import { createClient as createWsClient } from 'graphql-ws';
import WebSocket from 'ws';

/** A subscription transport of the gateway. */
export type SubscriptionTransport = 'graphql-ws' | 'sse' | 'multipart';

/** A result as the three clients hand it over. */
interface Result {
  data?: unknown;
  extensions?: { position?: string; caughtUp?: unknown };
}

/**
 * A subscriber that resumes as a client of the gateway should: it keeps the last position it
 * received and sends it back whenever it comes back (graphql-ws: the subscribe payload's
 * `extensions.after`, which graphql-ws's client sends again on every reconnect; SSE: `Last-Event-ID`,
 * which graphql-sse's client takes from its headers on every retry; multipart: Apollo Client's
 * subscription started again with the `after` variable once the stream ends).
 */
export interface ResumingSubscriber {
  transport: SubscriptionTransport;
  /** The position of every event received, in the order received (caught-up results excluded). */
  positions: string[];
  /** When each was received (performance.now()). */
  receivedAt: number[];
  /** Multipart only: when each position's bytes reached the client, before Apollo Client handed the result over. */
  arrivedAt: Map<string, number>;
  /** When the subscriber (re)connected (performance.now()): graphql-ws once acknowledged; SSE and multipart once the stream's headers arrived. */
  reconnectedAt: number[];
  errors: string[];
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Starts a resuming subscriber of `query` (whose one variable `$after` is the position) on `url` (the gateway's `/graphql`). */
export function resumingSubscriber(
  transport: SubscriptionTransport,
  url: string,
  headers: Record<string, string>,
  query: string,
): ResumingSubscriber {
  const subscriber: ResumingSubscriber = {
    transport,
    positions: [],
    receivedAt: [],
    arrivedAt: new Map(),
    reconnectedAt: [],
    errors: [],
    stop: async () => {},
  };
  let last: string | null = null;
  const take = (result: Result) => {
    const position = result.extensions?.position;
    if (!position || result.extensions?.caughtUp !== undefined || result.data === undefined || result.data === null) return;
    last = position;
    subscriber.positions.push(position);
    subscriber.receivedAt.push(performance.now());
  };
  if (transport === 'graphql-ws') {
    const payload: { query: string; extensions: { after?: string } } = { query, extensions: {} };
    const client = createWsClient({
      url: url.replace('http', 'ws'),
      webSocketImpl: WebSocket,
      connectionParams: headers,
      retryAttempts: 1000,
      retryWait: () => sleep(250),
      shouldRetry: () => true,
      on: { connected: () => void subscriber.reconnectedAt.push(performance.now()) },
    });
    client.subscribe(payload, {
      next: (result) => {
        take(result as Result);
        if (last) payload.extensions.after = last;
      },
      error: (error) => void subscriber.errors.push(JSON.stringify(error, ['message', 'code', 'reason'])),
      complete: () => {},
    });
    subscriber.stop = () => client.dispose() as Promise<void>;
  } else if (transport === 'sse') {
    const client = createSseClient({
      url,
      headers: () => ({ ...headers, ...(last ? { 'last-event-id': last } : {}) }),
      retryAttempts: 1000,
      retry: () => sleep(250),
      on: { connected: () => void subscriber.reconnectedAt.push(performance.now()) },
    });
    const unsubscribe = client.subscribe(
      { query },
      { next: take, error: (error) => void subscriber.errors.push(String(error)), complete: () => {} },
    );
    subscriber.stop = async () => {
      unsubscribe();
      client.dispose();
    };
  } else {
    /** When the last response's headers arrived: the stream is open. */
    let openedAt = 0;
    // The response's bytes, read beside Apollo Client: when each position arrived, to tell the gateway's time from the client's.
    const fetchNoting: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      openedAt = performance.now();
      if (!response.body) return response;
      const [noted, handed] = response.body.tee();
      void (async () => {
        const reader = (noted as ReadableStream<Uint8Array>).getReader();
        const decoder = new TextDecoder();
        for (;;) {
          const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
          if (done) break;
          for (const match of decoder.decode(value, { stream: true }).matchAll(/"position":"(\d+-\d+)"/g))
            if (!subscriber.arrivedAt.has(match[1]!)) subscriber.arrivedAt.set(match[1]!, performance.now());
        }
      })();
      return new Response(handed, { status: response.status, statusText: response.statusText, headers: response.headers });
    };
    const client = new ApolloClient({ link: new HttpLink({ uri: url, headers, fetch: fetchNoting }), cache: new InMemoryCache() });
    let going = true;
    let current: { unsubscribe(): void } | null = null;
    const start = () => {
      // Apollo Client says nothing when the stream opens: an attempt that gets a result counts as a reconnection from its response's headers.
      const attemptAt = performance.now();
      let answered = false;
      const again = () => {
        if (going) void sleep(250).then(() => going && start());
      };
      current = client.subscribe({ query: gql(query), variables: last ? { after: last } : {}, fetchPolicy: 'no-cache' }).subscribe({
        next: (result) => {
          if (!answered) subscriber.reconnectedAt.push(Math.max(attemptAt, openedAt));
          answered = true;
          take(result);
        },
        // A stream the gateway ended (a restart) or a gateway that is away: subscribe again with the last position.
        error: again,
        complete: again,
      });
    };
    start();
    subscriber.stop = async () => {
      going = false;
      current?.unsubscribe();
      client.stop();
    };
  }
  return subscriber;
}
