import { HTTP_TRANSPORT } from '../../platform/http/transport.js';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSubgraphFetcher, UNSHARED_READ_HEADER } from '../../gateway/src/subgraph-fetch.js';
import { PRINCIPAL_HEADER } from '../../platform/security/signed-headers.js';

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
    fetcher(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [PRINCIPAL_HEADER]: principal },
      body: JSON.stringify(body),
    }).then((r) => r.json() as Promise<{ data: { n: number } }>);

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

  it("sends the reads of a mutation's plan on their own, without the marking header", async () => {
    const fetcher = createSubgraphFetcher(5000, HTTP_TRANSPORT, () => 'test');
    received = 0;
    const read = (unshared: boolean) =>
      fetcher(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', [PRINCIPAL_HEADER]: 'p1', ...(unshared ? { [UNSHARED_READ_HEADER]: '1' } : {}) },
        body: JSON.stringify({ query: 'query { me { id } }' }),
      });
    await Promise.all([read(false), read(true), read(false)]);
    expect(received).toBe(2);
    expect(seenHeaders.some((headers) => headers[UNSHARED_READ_HEADER] !== undefined)).toBe(false);
  });

  it("gives up on a read that takes longer than the timeout, but waits for a write, the gateway's marked ones included", async () => {
    const fetcher = createSubgraphFetcher(30, HTTP_TRANSPORT, () => 'test');
    await expect(call(fetcher, { query: 'query { me { id } }' })).rejects.toThrow(/timeout|aborted/i);
    // eslint-disable-next-line @typescript-eslint/no-unsafe-assignment -- vitest types its asymmetric matchers as any.
    await expect(call(fetcher, { query: 'mutation { logout }' })).resolves.toMatchObject({ data: { n: expect.any(Number) } });
    // The gateway marks every fetch of a mutation's plan, the mutation itself too.
    const marked = await fetcher(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [PRINCIPAL_HEADER]: 'p1', [UNSHARED_READ_HEADER]: '1' },
      body: JSON.stringify({ query: 'mutation { logout }' }),
    });
    expect(marked.status).toBe(200);
    await expect(
      fetcher(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', [PRINCIPAL_HEADER]: 'p1', [UNSHARED_READ_HEADER]: '1' },
        body: JSON.stringify({ query: 'query { me { id } }' }),
      }),
    ).rejects.toThrow(/timeout|aborted/i);
  });
});
