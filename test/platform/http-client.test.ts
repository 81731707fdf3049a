import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHitCounter } from '../../gateway/src/rate-limits.js';
import type { GraphQLError } from 'graphql';
import { loadConfig } from '../../platform/runtime/config.js';
import { ErrorCode } from '../../platform/contracts/errors.js';
import { createGraphClient } from '../../platform/graphql/graph-client.js';
import { connectionPool, postJson } from '../../platform/http/client.js';
import { createLogger } from '../../platform/runtime/logger.js';

describe("the services' JSON POST", () => {
  let server: http.Server;
  let base: string;
  /** The connections the server was called on. */
  const connections: Socket[] = [];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      if (!connections.includes(req.socket)) connections.push(req.socket);
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        if (req.url === '/silent') return; // never answers
        if (req.url === '/huge') {
          res.writeHead(200, { 'content-type': 'application/json' });
          const chunk = Buffer.alloc(1024 * 1024, 'x');
          for (let i = 0; i < 40; i += 1) res.write(chunk);
          return res.end();
        }
        res
          .writeHead(201, { 'content-type': 'application/json', 'x-seen': req.headers['x-test'] ?? '' })
          .end(JSON.stringify({ echo: JSON.parse(body) as unknown }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('posts the body with the headers and reads the whole answer', async () => {
    const answer = await postJson(`${base}/echo`, { 'content-type': 'application/json', 'x-test': 'yes' }, JSON.stringify({ a: 1 }), 2000);
    expect(answer.status).toBe(201);
    expect(answer.headers['x-seen']).toBe('yes');
    expect(JSON.parse(answer.text)).toEqual({ echo: { a: 1 } });
  });

  it('fails a call not answered within its deadline', async () => {
    const started = Date.now();
    await expect(postJson(`${base}/silent`, {}, '{}', 300)).rejects.toThrow(/within the 300 ms timeout/);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('keeps a connection for the next call, and counts the wait for one in the deadline', async () => {
    const pool = connectionPool(1);
    const before = connections.length;
    try {
      await postJson(`${base}/echo`, {}, '{}', 2000, pool);
      await postJson(`${base}/echo`, {}, '{}', 2000, pool);
      expect(connections.length - before).toBe(1);
      const held = postJson(`${base}/silent`, {}, '{}', 5000, pool).catch((error: unknown) => error);
      const started = Date.now();
      await expect(postJson(`${base}/echo`, {}, '{}', 300, pool)).rejects.toThrow(/within the 300 ms timeout/);
      // Well under the held call's 5 s: the old client failed only once that call let the socket go.
      expect(Date.now() - started).toBeLessThan(2000);
      pool['http:'].destroy();
      await held;
    } finally {
      pool['http:'].destroy();
    }
  });

  it('fails an answer over 32 MiB instead of buffering it', async () => {
    await expect(postJson(`${base}/huge`, {}, '{}', 10_000)).rejects.toThrow(/over/);
  });
});

describe('the rate-limit store', () => {
  it('fails fast when Redis does not answer, so the gateway can serve without it', async () => {
    const counter = createHitCounter('redis://127.0.0.1:1', 'unreachable_', createLogger('silent'));
    const started = Date.now();
    await expect(counter.hit('k', 1000)).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(2000);
    await counter.close().catch(() => undefined);
  });
});

describe("a subgraph's call to the graph", () => {
  it("answers UNAVAILABLE without the gateway's address when the gateway is unreachable or answers no JSON", async () => {
    // A port that was free a moment ago: nothing listens there.
    const probe = http.createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const closedPort = (probe.address() as AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const unreachable = createGraphClient(loadConfig({ NODE_ENV: 'test', GATEWAY_URL: `http://127.0.0.1:${closedPort}/graphql` }), 'cards');
    const refused = await unreachable.request('{ __typename }').then(
      () => null,
      (error: unknown) => error as GraphQLError,
    );
    expect(refused?.extensions.code).toBe(ErrorCode.UNAVAILABLE);
    expect(refused?.message).toBe("The graph did not answer cards's call.");
    expect((refused?.cause as NodeJS.ErrnoException | undefined)?.code).toBe('ECONNREFUSED');

    const html = http.createServer((_req, res) => res.writeHead(502, { 'content-type': 'text/html' }).end('<h1>Bad gateway</h1>'));
    await new Promise<void>((resolve) => html.listen(0, '127.0.0.1', resolve));
    try {
      const proxied = createGraphClient(
        loadConfig({ NODE_ENV: 'test', GATEWAY_URL: `http://127.0.0.1:${(html.address() as AddressInfo).port}/graphql` }),
        'cards',
      );
      const error = await proxied.request('{ __typename }').then(
        () => null,
        (failure: unknown) => failure as GraphQLError,
      );
      expect(error?.extensions.code).toBe(ErrorCode.UNAVAILABLE);
      expect(error?.message).toBe("The graph answered cards's call with 502 and no JSON.");
    } finally {
      await new Promise<void>((resolve) => html.close(() => resolve()));
    }
  });
});
