import { ApolloClient, HttpLink, InMemoryCache, gql } from '@apollo/client';
import { createClient as createSseClient } from 'graphql-sse';
import { createClient as createWsClient } from 'graphql-ws';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { DEMO } from '../../platform/domain/demo.js';
import { startTestStack, until, type TestStack } from '../support/harness.js';

// The three transports of the gateway's subscriptions, each with a client we did not write:
// graphql-ws's, graphql-sse's (distinct connections mode) and Apollo Client 4's HTTP link (multipart).

const CARD = DEMO.cardIds[0];
const QUERY = 'subscription Cards($after: String) { cardStatusChanged(after: $after) { SvcCardId status } }';

/** A result as every transport hands it to its client. */
interface Result {
  data?: { cardStatusChanged: { SvcCardId: string; status: string } } | null;
  errors?: ReadonlyArray<{ message: string; extensions?: Record<string, unknown> }>;
  /** Apollo Client's: the result's errors, combined. */
  error?: { errors?: ReadonlyArray<{ extensions?: Record<string, unknown> }> };
  extensions?: { position?: string; replayed?: boolean; caughtUp?: { replayed: number } };
}

/** What one subscription received, and how to end it. */
interface Collected {
  results: Result[];
  failures: unknown[];
  completed: boolean;
  stop(): void;
}

const collector = (): Omit<Collected, 'stop'> => ({ results: [], failures: [], completed: false });

describe('subscriptions over graphql-ws, Server-Sent Events and multipart HTTP', () => {
  let stack: TestStack;
  let token: string;
  let url: string;
  const stops: Array<() => void> = [];

  beforeAll(async () => {
    stack = await startTestStack({ REDIS_URL: 'redis://127.0.0.1:6379' });
    token = await stack.loginDemo();
    url = `${stack.gateway.url}/graphql`;
  });
  afterAll(async () => {
    for (const stop of stops) stop();
    await stack.stop();
  });

  const overWs = (after?: string, extensions?: Record<string, unknown>): Collected => {
    const got = collector();
    const client = createWsClient({
      url: url.replace('http', 'ws'),
      webSocketImpl: WebSocket,
      connectionParams: { token },
      retryAttempts: 0,
    });
    client.subscribe(
      { query: QUERY, variables: after ? { after } : {}, ...(extensions ? { extensions } : {}) },
      {
        next: (value) => void got.results.push(value as Result),
        error: (error) => void got.failures.push(error),
        complete: () => (got.completed = true),
      },
    );
    const stop = () => void client.dispose();
    stops.push(stop);
    return Object.assign(got, { stop });
  };
  const overSse = (headers: Record<string, string> = {}, after?: string): Collected => {
    const got = collector();
    const client = createSseClient({ url, headers: { token, ...headers }, retryAttempts: 0 });
    const unsubscribe = client.subscribe(
      { query: QUERY, variables: after ? { after } : {} },
      {
        next: (value) => void got.results.push(value as Result),
        error: (error) => void got.failures.push(error),
        complete: () => (got.completed = true),
      },
    );
    const stop = () => {
      unsubscribe();
      client.dispose();
    };
    stops.push(stop);
    return Object.assign(got, { stop });
  };
  const overMultipart = (after?: string): Collected => {
    const got = collector();
    const client = new ApolloClient({ link: new HttpLink({ uri: url, headers: { token } }), cache: new InMemoryCache() });
    const subscription = client.subscribe({ query: gql(QUERY), variables: after ? { after } : {} }).subscribe({
      next: (value) => void got.results.push(value as Result),
      error: (error: unknown) => void got.failures.push(error),
      complete: () => (got.completed = true),
    });
    const stop = () => {
      subscription.unsubscribe();
      client.stop();
    };
    stops.push(stop);
    return Object.assign(got, { stop });
  };
  const data = (got: Collected) => got.results.filter((result) => result.data);
  const toggle = async (to: 'off' | 'on') => {
    expect((await stack.rest('POST', `/cards/${CARD}/${to}`, { headers: { token } })).status).toBe(200);
  };
  beforeEach(async () => {
    await stack.rest('POST', `/cards/${CARD}/on`, { headers: { token } });
  });
  const subscribedAll = async (count: number) =>
    until(
      async () => stack.gateway.subscribers(),
      (n) => n >= count,
    );

  it('delivers the same events on every transport, each with its position in the event log', async () => {
    const before = stack.gateway.subscribers();
    const ws = overWs();
    const sse = overSse();
    const multipart = overMultipart();
    await subscribedAll(before + 3);
    await toggle('off');
    await toggle('on');
    for (const got of [ws, sse, multipart])
      await until(
        async () => data(got).length,
        (n) => n >= 2,
      );
    const positions = data(ws).map((result) => result.extensions?.position);
    expect(positions.every((position) => /^\d+-\d+$/.test(position ?? ''))).toBe(true);
    for (const got of [sse, multipart]) {
      expect(data(got).map((result) => result.data?.cardStatusChanged.SvcCardId)).toEqual([CARD, CARD]);
      expect(data(got).map((result) => result.extensions?.position)).toEqual(positions);
    }
    for (const got of [ws, sse, multipart]) expect(got.failures).toEqual([]);
    for (const got of [ws, sse, multipart]) got.stop();
    await until(
      async () => stack.gateway.subscribers(),
      (n) => n === before,
    );
  });

  it('resumes on every transport after a position: the missed events in order, a caught-up result, then the live ones', async () => {
    const before = stack.gateway.subscribers();
    const first = overWs();
    await subscribedAll(before + 1);
    await toggle('off');
    await until(
      async () => data(first).length,
      (n) => n >= 1,
    );
    const resumeFrom = data(first)[0]!.extensions!.position!;
    first.stop();
    // Missed while away.
    await toggle('on');
    await toggle('off');
    const missedWs = overWs(undefined, { after: resumeFrom });
    const missedSse = overSse({ 'last-event-id': resumeFrom });
    const missedMultipart = overMultipart(resumeFrom);
    const all = [missedWs, missedSse, missedMultipart];
    // graphql-ws and SSE say when they have caught up; Apollo Client would show such a result as its last data again, so multipart does not.
    for (const got of [missedWs, missedSse]) await until(async () => got.results.some((result) => result.extensions?.caughtUp), Boolean);
    await until(
      async () => data(missedMultipart).length,
      (n) => n >= 2,
    );
    for (const got of all) {
      const replayed = got.results.slice(0, 2);
      expect(replayed.map((result) => result.extensions?.replayed)).toEqual([true, true]);
      expect(replayed.map((result) => result.data?.cardStatusChanged.SvcCardId)).toEqual([CARD, CARD]);
    }
    for (const got of [missedWs, missedSse]) {
      expect(got.results[2]?.extensions?.caughtUp).toEqual({ replayed: 2 });
      expect(got.results[2]?.data).toBeUndefined();
    }
    const replayedPositions = missedWs.results.slice(0, 2).map((result) => result.extensions?.position);
    expect(missedSse.results.slice(0, 2).map((result) => result.extensions?.position)).toEqual(replayedPositions);
    expect(missedMultipart.results.slice(0, 2).map((result) => result.extensions?.position)).toEqual(replayedPositions);
    // Then live, once each.
    await toggle('on');
    for (const got of all)
      await until(
        async () => data(got).length,
        (n) => n >= 3,
      );
    await new Promise((resolve) => setTimeout(resolve, 300));
    for (const got of all) {
      expect(data(got)).toHaveLength(3);
      expect(data(got)[2]?.extensions?.replayed).toBeUndefined();
      expect(got.failures).toEqual([]);
      got.stop();
    }
  });

  it('ends a subscription resumed from a position the log does not hold with EVENTS_EXPIRED, on every transport', async () => {
    const ws = overWs('1-0');
    const sse = overSse({}, '1-0');
    const multipart = overMultipart('1-0');
    await until(
      async () => ws.failures.length + ws.results.length,
      (n) => n > 0,
    );
    await until(
      async () => sse.results.length,
      (n) => n > 0,
    );
    await until(
      async () => multipart.results.length + multipart.failures.length,
      (n) => n > 0,
    );
    // graphql-ws: an `error` message; SSE and multipart: a result with the error, then the end.
    expect((ws.failures[0] as Array<{ extensions?: { code?: string } }> | undefined)?.[0]?.extensions?.code).toBe('EVENTS_EXPIRED');
    expect(sse.results[0]?.errors?.[0]?.extensions?.code).toBe('EVENTS_EXPIRED');
    await until(async () => sse.completed, Boolean);
    expect(multipart.results[0]?.error?.errors?.[0]?.extensions?.code).toBe('EVENTS_EXPIRED');
    await until(async () => multipart.completed, Boolean);
  });

  it('refuses a stream before it starts: no credentials (401), a query (400), a malformed position (400)', async () => {
    const post = (body: unknown, headers: Record<string, string>) =>
      fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
        body: JSON.stringify(body),
      });
    const anonymous = await post({ query: QUERY }, {});
    expect(anonymous.status).toBe(401);
    expect(((await anonymous.json()) as Result).errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    const query = await post({ query: '{ me { SvcUserId } }' }, { token });
    expect(query.status).toBe(400);
    const badPosition = await post({ query: QUERY, variables: { after: 'not a position' } }, { token });
    expect(badPosition.status).toBe(200);
    const text = await badPosition.text();
    expect(text).toContain('"field":"after"');
    expect(text).toContain('event: complete');
  });

  it('serves a browser EventSource: a GET with the document in the URL, resumed with Last-Event-ID', async () => {
    const before = stack.gateway.subscribers();
    const live = overWs();
    await subscribedAll(before + 1);
    await toggle('off');
    await until(
      async () => data(live).length,
      (n) => n >= 1,
    );
    const from = data(live)[0]!.extensions!.position!;
    await toggle('on');
    await until(
      async () => data(live).length,
      (n) => n >= 2,
    );
    live.stop();
    const controller = new AbortController();
    const response = await fetch(`${url}?query=${encodeURIComponent(QUERY)}`, {
      headers: { accept: 'text/event-stream', token, 'last-event-id': from },
      signal: controller.signal,
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    let text = '';
    const decoder = new TextDecoder();
    while (!text.includes('caughtUp')) {
      const { value } = await reader.read();
      text += decoder.decode(value);
    }
    controller.abort();
    expect(text).toContain(`id: ${data(live)[1]!.extensions!.position!}\nevent: next\n`);
  });
});
