import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { documentOverLimits } from '../../gateway/src/document-limits.js';
import { CLIENT_IP_HEADER, signClientIp } from '../../platform/security/signed-headers.js';
import { startTestStack, type GraphQLBody, type TestStack } from '../support/harness.js';

/** The issue's document: a few hundred thousand aliases of `__typename`, each costing a field to parse and validate. */
const aliases = (count: number) => `{ ${Array.from({ length: count }, (_, i) => `a${i}: __typename`).join(' ')} }`;

describe('documents and requests refused before parsing', () => {
  let stack: TestStack;

  beforeAll(async () => {
    stack = await startTestStack({ TRUST_PROXY: 'true', RATE_LIMIT_REQUESTS_PER_ADDRESS: '4', RATE_LIMIT_REQUESTS_PER_CREDENTIAL: '3' });
  });
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- beforeAll may have failed before assigning it.
  afterAll(() => stack?.stop());

  /** A POST to the gateway's /graphql from a client address of the test's choosing (the stack trusts one proxy). */
  const post = async (body: string, from: string, headers: Record<string, string> = {}) => {
    const response = await fetch(`${stack.gateway.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': from, ...headers },
      body,
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: JSON.parse(text) as GraphQLBody };
  };

  it('refuses a 7.5 MiB document from a direct client with 413 before reading it, and closes the connection', async () => {
    const body = JSON.stringify({ query: aliases(400_000) });
    expect(body.length).toBeGreaterThan(7 * 1024 * 1024);
    const refused = await post(body, '198.51.100.1');
    expect(refused.status).toBe(413);
    expect(refused.body.errors?.[0]?.extensions?.code).toBe('PAYLOAD_TOO_LARGE');
    expect(refused.headers.get('connection')).toBe('close');
  });

  it('answers 413 to a body over the limit sent in chunks without a declared length, rather than resetting the connection', async () => {
    const answer = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = request(
        `${stack.gateway.url}/graphql`,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked', 'x-forwarded-for': '198.51.100.7' },
        },
        (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => (text += chunk.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        },
      );
      req.on('error', reject);
      const chunk = Buffer.alloc(256 * 1024, 'a');
      req.write('{"query":"');
      // Past the 2 MiB limit in chunks; the server answers once the limit is passed.
      for (let sent = 0; sent < 3 * 1024 * 1024; sent += chunk.length) req.write(chunk);
      req.end('"}');
    });
    expect(answer.status).toBe(413);
    expect((JSON.parse(answer.text) as GraphQLBody).errors?.[0]?.extensions?.code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('refuses a document over GRAPHQL_MAX_DOCUMENT_BYTES with 400 OPERATION_LIMIT_EXCEEDED, by POST and by GET', async () => {
    const query = aliases(8_000);
    expect(query.length).toBeGreaterThan(stack.config.documentLimits.maxBytes);
    const refused = await post(JSON.stringify({ query }), '198.51.100.2');
    expect(refused.status).toBe(400);
    expect(refused.body.errors?.[0]?.extensions?.code).toBe('OPERATION_LIMIT_EXCEEDED');
    expect(refused.body.errors?.[0]?.message).toMatch(/over 65536 bytes/);
    // A GET's query string is bounded by the header size; a shorter document over the token limit is refused there too.
    const byGet = await fetch(`${stack.gateway.url}/graphql?query={${'a+'.repeat(5001)}}`, {
      headers: { 'apollo-require-preflight': 'true', 'x-forwarded-for': '198.51.100.2' },
    });
    expect(byGet.status).toBe(400);
    expect(((await byGet.json()) as GraphQLBody).errors?.[0]?.extensions?.code).toBe('OPERATION_LIMIT_EXCEEDED');
  });

  it('refuses a document over GRAPHQL_MAX_TOKENS before parsing: the fields it names are never looked up', async () => {
    // Unknown fields: once parsed, validation would answer GRAPHQL_VALIDATION_FAILED.
    const query = `{ ${'a '.repeat(5001)}}`;
    expect(query.length).toBeLessThan(stack.config.documentLimits.maxBytes);
    const refused = await post(JSON.stringify({ query }), '198.51.100.3');
    expect(refused.status).toBe(400);
    expect(refused.body.errors?.[0]?.extensions?.code).toBe('OPERATION_LIMIT_EXCEEDED');
    expect(refused.body.errors?.[0]?.message).toMatch(/over 5000 tokens/);
    // An automatic persisted query's text is the same document.
    const registered = await post(
      JSON.stringify({ query, extensions: { persistedQuery: { version: 1, sha256Hash: '0'.repeat(64) } } }),
      '198.51.100.3',
    );
    expect(registered.body.errors?.[0]?.extensions?.code).toBe('OPERATION_LIMIT_EXCEEDED');
  });

  it("counts the lexer's tokens as the parser does, comments aside", () => {
    const limits = { maxBytes: 1024, maxTokens: 5 };
    expect(documentOverLimits('{ a b c }', limits)).toBeNull();
    expect(documentOverLimits('# many words in a comment\n{ a b c }', limits)).toBeNull();
    expect(documentOverLimits('{ a b c d e }', limits)?.limit).toBe('tokens');
    expect(documentOverLimits('"unterminated', limits)).toBeNull();
    expect(documentOverLimits(`{ ${'é'.repeat(600)} }`, limits)?.limit).toBe('bytes');
  });

  it("reads a large body only from a caller that signs its calls (the REST adapter's uploads)", async () => {
    const body = JSON.stringify({
      query: 'query ($blob: String!) { __type(name: $blob) { name } }',
      variables: { blob: 'x'.repeat(3 * 1024 * 1024) },
    });
    const direct = await post(body, '198.51.100.4');
    expect(direct.status).toBe(413);
    const signed = await post(body, '198.51.100.4', { [CLIENT_IP_HEADER]: signClientIp('198.51.100.4', stack.config.internalSecret) });
    expect(signed.status).toBe(200);
    expect(signed.body.data).toEqual({ __type: null });
  });

  it('counts whole requests per address before parsing: past the limit even a broken document is 429, and another address is served', async () => {
    const from = '198.51.100.5';
    for (let i = 0; i < 4; i += 1) expect((await post(JSON.stringify({ query: '{ __typename }' }), from)).status).toBe(200);
    const refused = await post(JSON.stringify({ query: '{ me {' }), from);
    expect(refused.status).toBe(429);
    expect(refused.body.errors?.[0]?.extensions?.code).toBe('RATE_LIMITED');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await post(JSON.stringify({ query: '{ __typename }' }), '198.51.100.6')).status).toBe(200);
  });

  it('counts made-up credentials against their address before looking them up', async () => {
    const from = '198.51.100.8';
    const statuses: number[] = [];
    for (let i = 0; i < 5; i += 1)
      statuses.push((await post(JSON.stringify({ query: '{ me { firstName } }' }), from, { token: `made-up-token-${i}` })).status);
    // Four session lookups that found nothing, then a refusal that needed none.
    expect(statuses).toEqual([401, 401, 401, 401, 429]);
  });

  it('counts subscription streams (SSE, multipart) against their address before their credentials are looked up', async () => {
    const from = '198.51.100.9';
    const statuses: number[] = [];
    for (let i = 0; i < 5; i += 1) {
      const answer = await fetch(`${stack.gateway.url}/graphql`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: i % 2 === 0 ? 'text/event-stream' : 'multipart/mixed;boundary=graphql;subscriptionSpec=1.0',
          'x-forwarded-for': from,
          token: `made-up-token-${i}`,
        },
        body: JSON.stringify({ query: 'subscription { cardStatusChanged { SvcCardId } }' }),
      });
      await answer.arrayBuffer();
      statuses.push(answer.status);
    }
    expect(statuses).toEqual([401, 401, 401, 401, 429]);
  });

  it('counts whole requests per credential, whatever address they come from', async () => {
    const token = await stack.issueUserToken('demo_user_1');
    for (let i = 0; i < 3; i += 1)
      expect((await post(JSON.stringify({ query: '{ me { firstName } }' }), `203.0.113.${i + 1}`, { token })).status).toBe(200);
    const refused = await post(JSON.stringify({ query: '{ me { firstName } }' }), '203.0.113.9', { token });
    expect(refused.status).toBe(429);
    expect(refused.body.errors?.[0]?.message).toMatch(/with this credential/);
  });
});
