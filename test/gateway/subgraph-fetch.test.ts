import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { GraphQLError } from 'graphql';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { GatewayContext } from '../../gateway/src/context.js';
import { createHeaderSigner, createSubgraphFetcher, SubgraphSource } from '../../gateway/src/subgraph-fetch.js';
import type { SubgraphOperation } from '../../gateway/src/execution/plan-execution.js';
import type { Principal } from '../../platform/contracts/principal.js';
import { HTTP_TRANSPORT } from '../../platform/http/transport.js';
import { createLogger } from '../../platform/runtime/logger.js';
import { CLIENT_IP_HEADER, PRINCIPAL_HEADER, verifyClientIp, verifyPrincipal } from '../../platform/security/signed-headers.js';

const SECRET = 'a-secret-of-at-least-thirty-two-characters';
const dana: Principal = { kind: 'user', userId: 'u-1', sessionId: 's-1', channel: 'password' };

describe("the gateway's subgraph fetch", () => {
  let server: http.Server;
  let url: string;
  let received = 0;
  const seenHeaders: http.IncomingHttpHeaders[] = [];

  beforeAll(async () => {
    // A slow subgraph: every answer waits 100 ms, so concurrent calls overlap.
    server = http.createServer((req, res) => {
      received += 1;
      seenHeaders.push(req.headers);
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () =>
        setTimeout(
          () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: { echo: body, n: received } })),
          100,
        ),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const call = (fetcher: ReturnType<typeof createSubgraphFetcher>, body: unknown, principal = 'p1') =>
    fetcher(url, { 'content-type': 'application/json', [PRINCIPAL_HEADER]: principal }, JSON.stringify(body), false).then(
      (answer) => JSON.parse(answer.text) as { data: { n: number } },
    );

  it('sends identical reads in flight once and gives each caller the answer', async () => {
    const fetcher = createSubgraphFetcher(5000, HTTP_TRANSPORT, () => 'test');
    received = 0;
    const answers = await Promise.all(Array.from({ length: 10 }, () => call(fetcher, { query: 'query { me { id } }' })));
    expect(received).toBe(1);
    expect(new Set(answers.map((a) => a.data.n))).toEqual(new Set([1]));
    expect(fetcher.counts).toEqual({ sent: 1, shared: 9 });
    // Once answered, the next read goes to the subgraph again: nothing is cached.
    await call(fetcher, { query: 'query { me { id } }' });
    expect(received).toBe(2);
    expect(fetcher.counts).toEqual({ sent: 2, shared: 9 });
  });

  it('never shares writes, nor reads of different principals or variables', async () => {
    const fetcher = createSubgraphFetcher(5000, HTTP_TRANSPORT, () => 'test');
    received = 0;
    await Promise.all([
      call(fetcher, { query: 'mutation { logout }' }),
      call(fetcher, { query: 'mutation { logout }' }),
      call(fetcher, { query: 'query { me { id } }' }, 'p1'),
      call(fetcher, { query: 'query { me { id } }' }, 'p2'),
      call(fetcher, { query: 'query($a: ID!) { card(SvcCardId: $a) { num } }', variables: { a: '1' } }),
      call(fetcher, { query: 'query($a: ID!) { card(SvcCardId: $a) { num } }', variables: { a: '2' } }),
    ]);
    expect(received).toBe(6);
    expect(fetcher.counts).toEqual({ sent: 6, shared: 0 });
  });

  it("sends the reads of a mutation's plan on their own, and only the headers it was given", async () => {
    const fetcher = createSubgraphFetcher(5000, HTTP_TRANSPORT, () => 'test');
    received = 0;
    seenHeaders.length = 0;
    const read = (unshared: boolean) =>
      fetcher(
        url,
        { 'content-type': 'application/json', [PRINCIPAL_HEADER]: 'p1' },
        JSON.stringify({ query: 'query { me { id } }' }),
        unshared,
      );
    await Promise.all([read(false), read(true), read(false)]);
    expect(received).toBe(2);
    for (const headers of seenHeaders)
      expect(
        Object.keys(headers)
          .filter((name) => !['host', 'connection', 'content-length'].includes(name))
          .sort(),
      ).toEqual(['content-type', PRINCIPAL_HEADER]);
  });

  it("gives up on a read that takes longer than the timeout, but waits for a write, the gateway's marked ones included", async () => {
    const fetcher = createSubgraphFetcher(30, HTTP_TRANSPORT, () => 'test');
    await expect(call(fetcher, { query: 'query { me { id } }' })).rejects.toThrow(/timeout|aborted/i);
    // eslint-disable-next-line @typescript-eslint/no-unsafe-assignment -- vitest types its asymmetric matchers as any.
    await expect(call(fetcher, { query: 'mutation { logout }' })).resolves.toMatchObject({ data: { n: expect.any(Number) } });
    // The gateway marks every fetch of a mutation's plan, the mutation itself too.
    const marked = await fetcher(
      url,
      { 'content-type': 'application/json', [PRINCIPAL_HEADER]: 'p1' },
      JSON.stringify({ query: 'mutation { logout }' }),
      true,
    );
    expect(marked.status).toBe(200);
    await expect(
      fetcher(
        url,
        { 'content-type': 'application/json', [PRINCIPAL_HEADER]: 'p1' },
        JSON.stringify({ query: 'query { me { id } }' }),
        true,
      ),
    ).rejects.toThrow(/timeout|aborted/i);
  });
});

describe("the gateway's header signer", () => {
  it("signs a principal once and reuses it for a while, then signs it afresh within the signature's minute", () => {
    vi.useFakeTimers({ now: new Date('2026-11-28T10:00:00Z') });
    try {
      const signer = createHeaderSigner(SECRET);
      const first = signer.principal(dana);
      expect(verifyPrincipal(first, SECRET)).toEqual(dana);
      vi.advanceTimersByTime(19_000);
      expect(signer.principal(dana)).toBe(first);
      // Another object with the same content is another request's principal: signed on its own.
      expect(signer.principal({ ...dana })).not.toBe(first);
      vi.advanceTimersByTime(2000);
      const second = signer.principal(dana);
      expect(second).not.toBe(first);
      expect(verifyPrincipal(second, SECRET)).toEqual(dana);
      // Reused for 20 s at most, so it still had 40 of its 60 s when last handed out; past them it is refused.
      vi.advanceTimersByTime(40_000);
      expect(verifyPrincipal(first, SECRET)).toBeNull();
    } finally {
      vi.useRealTimers();
    }
  });

  it('signs client addresses that verify, and keeps no address a client named as an object key', () => {
    const signer = createHeaderSigner(SECRET);
    for (const address of ['203.0.113.9', '__proto__', 'valueOf']) expect(verifyClientIp(signer.clientIp(address), SECRET)).toBe(address);
  });
});

describe('a subgraph as the query plans reach it', () => {
  let server: http.Server;
  let url: string;
  let answer: { status: number; type: string; body: string } = { status: 200, type: 'application/json', body: '{"data":{"ok":true}}' };
  const seen: Array<{ headers: http.IncomingHttpHeaders; body: string }> = [];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        seen.push({ headers: req.headers, body });
        res.writeHead(answer.status, { 'content-type': answer.type }).end(answer.body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const sourceAt = (target: string) =>
    new SubgraphSource(
      target,
      'test',
      createSubgraphFetcher(2000, HTTP_TRANSPORT, () => 'test'),
      createHeaderSigner(SECRET),
      createLogger('silent'),
    );
  const options = (context: Partial<GatewayContext>, operation: 'query' | 'mutation' = 'query'): SubgraphOperation => ({
    query: `${operation} Q { ok }`,
    variables: { id: '1' },
    operationName: 'Q',
    mutation: operation === 'mutation',
    context,
  });

  it('posts the operation with the signed principal, the request id and the signed client address', async () => {
    seen.length = 0;
    answer = { status: 200, type: 'application/json', body: '{"data":{"ok":true}}' };
    const response = await sourceAt(url).send(options({ principal: dana, requestId: 'req-1', clientIp: '203.0.113.9' }));
    expect(response).toEqual({ data: { ok: true } });
    const [sent] = seen;
    expect(JSON.parse(sent!.body)).toEqual({ query: 'query Q { ok }', variables: { id: '1' }, operationName: 'Q' });
    expect(sent!.body.startsWith('{"query":')).toBe(true);
    expect(verifyPrincipal(sent!.headers[PRINCIPAL_HEADER] as string, SECRET)).toEqual(dana);
    expect(verifyClientIp(sent!.headers[CLIENT_IP_HEADER], SECRET)).toBe('203.0.113.9');
    expect(sent!.headers['x-request-id']).toBe('req-1');
  });

  it('sends a call without a request context as no one', async () => {
    seen.length = 0;
    await sourceAt(url).send(options({}));
    expect(verifyPrincipal(seen[0]!.headers[PRINCIPAL_HEADER] as string, SECRET)).toEqual({ kind: 'anonymous' });
    expect(seen[0]!.headers[CLIENT_IP_HEADER]).toBeUndefined();
  });

  it("passes a subgraph's refusal on with its code and field, and anything else as UNAVAILABLE without the address", async () => {
    answer = {
      status: 400,
      type: 'application/json',
      body: '{"errors":[{"message":"Bad id","extensions":{"code":"BAD_USER_INPUT","field":"id"}}]}',
    };
    await expect(sourceAt(url).send(options({ principal: dana }))).rejects.toMatchObject({
      message: 'Bad id',
      extensions: { code: 'BAD_USER_INPUT', field: 'id' },
    });
    for (const [status, type, body] of [
      [500, 'application/json', '{"errors":[{"message":"boom","extensions":{"code":"INTERNAL_SERVER_ERROR"}}]}'],
      [200, 'application/json', 'not json'],
      [200, 'text/plain', 'hello'],
    ] as const) {
      answer = { status, type, body };
      const error = await sourceAt(url)
        .send(options({ principal: dana }))
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(GraphQLError);
      expect((error as GraphQLError).extensions.code, `${status} ${body}`).toBe('UNAVAILABLE');
    }
    const refused = await sourceAt('http://127.0.0.1:1/graphql')
      .send(options({ principal: dana }))
      .catch((e: unknown) => e);
    expect((refused as GraphQLError).extensions.code).toBe('UNAVAILABLE');
    expect((refused as GraphQLError).message).not.toMatch(/127\.0\.0\.1|ECONNREFUSED/);
  });
});
