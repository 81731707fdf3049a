import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createClient } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ConfigError } from '../../platform/runtime/config.js';
import { DEMO } from '../../platform/domain/demo.js';
import { persistedQueryCache } from '../../gateway/src/trusted-documents.js';
import { persistedQueryManifest, readManifest, type TrustedDocument } from '../../platform/graphql/persisted-queries.js';
import { DASHBOARD_DOCUMENTS } from '../../web/operations.js';
import { startTestStack, toggleCardUntil, type GraphQLBody, type TestStack } from '../support/harness.js';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const PARTNER_QUERY = 'query PartnerCards { me { cards { SvcCardId status } } }';
const SERVICE_KEY = 'statements-key-0123456789abcdefghijklmnop';

/** Posts a GraphQL request body as it is (to send a hash without the text). */
async function post(stack: TestStack, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const response = await fetch(`${stack.gateway.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as GraphQLBody };
}

/** The first message a subscription gets: its first event or its refusal. */
async function firstMessage(stack: TestStack, query: string, token: string): Promise<string> {
  const client = createClient({
    url: `${stack.gateway.url.replace('http', 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { token },
    retryAttempts: 0,
  });
  try {
    for await (const message of client.iterate({ query })) return JSON.stringify(message);
    return 'completed';
  } catch (error) {
    return JSON.stringify(error);
  } finally {
    await client.dispose();
  }
}

describe('trusted documents', () => {
  describe('where only registered operations may run (TRUSTED_DOCUMENTS=require)', () => {
    let stack: TestStack;
    let token: string;

    beforeAll(async () => {
      const folder = mkdtempSync(path.join(tmpdir(), 'trusted-'));
      const file = path.join(folder, 'partner.json');
      const partner: TrustedDocument = { id: sha256(PARTNER_QUERY), name: 'PartnerCards', type: 'query', body: PARTNER_QUERY };
      writeFileSync(file, JSON.stringify(persistedQueryManifest([partner])));
      stack = await startTestStack({
        TRUSTED_DOCUMENTS: 'require',
        TRUSTED_DOCUMENTS_FILE: file,
        SERVICE_KEYS: `statements=${SERVICE_KEY}`,
      });
      token = await stack.loginDemo();
    });
    afterAll(async () => {
      await stack.stop();
    });

    it('serves every REST route, whose operations are registered', async () => {
      const restrictions = await stack.rest('GET', '/restrictions', { headers: { token } });
      expect(restrictions.status).toBe(200);
      const latest = await stack.rest('GET', `/accounts/${DEMO.accountId}/transactions/latest`, { headers: { token } });
      expect(latest.status).toBe(200);
    });

    it('refuses an operation that is not registered, before it runs, with 400 and OPERATION_NOT_TRUSTED', async () => {
      const refused = await stack.graphql('mutation { logout }', {}, { token });
      expect(refused.status).toBe(400);
      expect(refused.body.errors?.[0]?.extensions?.code).toBe('OPERATION_NOT_TRUSTED');
      // The logout did not run: the token still works.
      expect((await stack.rest('GET', '/restrictions', { headers: { token } })).status).toBe(200);
      const byUnknownHash = await post(
        stack,
        { extensions: { persistedQuery: { version: 1, sha256Hash: sha256('{ me { SvcUserId } }') } } },
        { token },
      );
      expect(byUnknownHash.body.errors?.[0]?.extensions?.code).toBe('OPERATION_NOT_TRUSTED');
    });

    it('refuses before validating, so a refusal tells nothing of the schema, over POST and GET alike', async () => {
      const misspelt = await stack.graphql('{ auditLo }', {}, { token });
      expect(misspelt.status).toBe(400);
      expect(misspelt.body.errors?.[0]?.extensions?.code).toBe('OPERATION_NOT_TRUSTED');
      expect(JSON.stringify(misspelt.body)).not.toContain('auditLog');
      const overGet = await fetch(`${stack.gateway.url}/graphql?query=${encodeURIComponent('{ me { SvcUserId } }')}`, {
        headers: { token, 'apollo-require-preflight': 'true' },
      });
      expect(overGet.status).toBe(400);
      expect(((await overGet.json()) as GraphQLBody).errors?.[0]?.extensions?.code).toBe('OPERATION_NOT_TRUSTED');
      const registeredOverGet = await fetch(`${stack.gateway.url}/graphql?query=${encodeURIComponent(PARTNER_QUERY)}`, {
        headers: { token, 'apollo-require-preflight': 'true' },
      });
      expect(registeredOverGet.status).toBe(200);
    });

    it('checks holders of service keys like any client', async () => {
      const refused = await stack.graphql('{ transactionTypes { name } }', {}, { 'x-service-key': SERVICE_KEY });
      expect(refused.body.errors?.[0]?.extensions?.code).toBe('OPERATION_NOT_TRUSTED');
    });

    it('does not let a client register a document the APQ way', async () => {
      const query = '{ me { SvcUserId } }';
      const register = await post(stack, { query, extensions: { persistedQuery: { version: 1, sha256Hash: sha256(query) } } }, { token });
      expect(register.body.errors?.[0]?.extensions?.code).toBe('OPERATION_NOT_TRUSTED');
      const again = await post(stack, { extensions: { persistedQuery: { version: 1, sha256Hash: sha256(query) } } }, { token });
      expect(again.body.errors?.[0]?.extensions?.code).toBe('OPERATION_NOT_TRUSTED');
    });

    it('runs a document of the configured manifest, by its text or by its hash alone', async () => {
      const byText = await stack.graphql<{ me: { cards: Array<{ SvcCardId: string }> } }>(PARTNER_QUERY, {}, { token });
      expect(byText.body.errors).toBeUndefined();
      expect(byText.body.data?.me.cards.map((card) => card.SvcCardId)).toEqual(expect.arrayContaining([...DEMO.cardIds]));
      const byHash = await post(stack, { extensions: { persistedQuery: { version: 1, sha256Hash: sha256(PARTNER_QUERY) } } }, { token });
      expect(byHash.body.errors).toBeUndefined();
      expect(byHash.body.data).toEqual(byText.body.data);
    });

    it("runs the dashboard's login and subscriptions, and refuses an unregistered subscription", async () => {
      const login = await stack.graphql<{ login: { token: string } }>(DASHBOARD_DOCUMENTS.userLogin, {
        input: { channel: 'internet', userName: DEMO.userName, password: DEMO.password },
      });
      expect(login.body.data?.login.token).toMatch(/.+/);
      const refused = await firstMessage(stack, 'subscription { cardStatusChanged { SvcCardId } }', token);
      expect(refused).toContain('OPERATION_NOT_TRUSTED');

      const accepted = firstMessage(stack, DASHBOARD_DOCUMENTS.userCardStatusChanged, token);
      let message: string | undefined;
      void accepted.then((m) => (message = m));
      await toggleCardUntil(stack, token, DEMO.cardIds[0], () => message !== undefined);
      expect(message).toContain(DEMO.cardIds[0]);
      expect(message).not.toContain('OPERATION_NOT_TRUSTED');
    });

    it("reads the dashboard's state with its registered queries, for both roles", async () => {
      const since = new Date(Date.now() - 24 * 60 * 60 * 1000).toISOString();
      const aggregator = await stack.issueToken({
        kind: 'aggregator',
        svcAggregatorId: DEMO.aggregatorId,
        login: DEMO.aggregatorLogin,
        tokenType: 'base',
      });
      const reads: Array<[string, Record<string, unknown>, Record<string, string>]> = [
        [DASHBOARD_DOCUMENTS.userState, { since }, { token }],
        [DASHBOARD_DOCUMENTS.userAccounts, {}, { token }],
        [DASHBOARD_DOCUMENTS.aggregatorState, { since }, { 'x-svc-token': aggregator }],
        [DASHBOARD_DOCUMENTS.aggregatorAchReport, {}, { 'x-svc-token': aggregator }],
      ];
      for (const [query, variables, headers] of reads) {
        const answer = await stack.graphql(query, variables, headers);
        expect(answer.body.errors, query.slice(0, 40)).toBeUndefined();
        expect(answer.body.data).toBeTruthy();
      }
    });
  });

  describe('by default (TRUSTED_DOCUMENTS=off)', () => {
    let stack: TestStack;

    beforeAll(async () => {
      stack = await startTestStack();
    });
    afterAll(async () => {
      await stack.stop();
    });

    it('runs any operation, and a registered one by its hash alone', async () => {
      const token = await stack.loginDemo();
      const any = await stack.graphql<{ me: { SvcUserId: string } }>('{ me { SvcUserId } }', {}, { token });
      expect(any.body.data?.me.SvcUserId).toBe(DEMO.userId);
      const registered = await post(stack, {
        variables: { input: { channel: 'internet', userName: DEMO.userName, password: DEMO.password } },
        extensions: { persistedQuery: { version: 1, sha256Hash: sha256(DASHBOARD_DOCUMENTS.userLogin) } },
      });
      expect(registered.body.errors).toBeUndefined();
    });

    it("refuses a persisted query whose hash is not its text's with 400 PERSISTED_QUERY_HASH_MISMATCH, over POST and GET, and logs no error", async () => {
      const query = '{ __typename }';
      const wrong = sha256(`${query} `);
      const before = stack.logs.length;
      const posted = await post(stack, { query, extensions: { persistedQuery: { version: 1, sha256Hash: wrong } } });
      expect(posted.status).toBe(400);
      expect(posted.body.errors?.[0]?.extensions?.code).toBe('PERSISTED_QUERY_HASH_MISMATCH');
      expect(posted.body.errors?.[0]?.message).toMatch(/provided sha does not match query/);
      const search = new URLSearchParams({ query, extensions: JSON.stringify({ persistedQuery: { version: 1, sha256Hash: wrong } }) });
      const got = await fetch(`${stack.gateway.url}/graphql?${search.toString()}`, { headers: { 'apollo-require-preflight': 'true' } });
      expect(got.status).toBe(400);
      expect(((await got.json()) as GraphQLBody).errors?.[0]?.extensions?.code).toBe('PERSISTED_QUERY_HASH_MISMATCH');
      // Nothing was registered under the wrong hash.
      const byHash = await post(stack, { extensions: { persistedQuery: { version: 1, sha256Hash: wrong } } });
      expect(byHash.body.errors?.[0]?.extensions?.code).toBe('PERSISTED_QUERY_NOT_FOUND');
      const logged = stack.logs.slice(before);
      expect(logged.filter((line) => line.level === 'error' || line.level === 50)).toEqual([]);
      expect(JSON.stringify(logged)).not.toMatch(/stack|provided sha/);
      // The right hash with the same text still runs.
      const right = await post(stack, { query, extensions: { persistedQuery: { version: 1, sha256Hash: sha256(query) } } });
      expect(right.body).toEqual({ data: { __typename: 'Query' } });
    });
  });

  it('keeps what clients register the APQ way within bounds: no oversized document, and the oldest out past 16 MiB', async () => {
    const cache = persistedQueryCache(new Map(), 'off');
    await cache.set('big', `{ me { SvcUserId } } #${'x'.repeat(70 * 1024)}`);
    expect(await cache.get('big')).toBeUndefined();
    const document = (i: number) => `{ me { SvcUserId } } #${String(i).padEnd(60 * 1024, 'x')}`;
    for (let i = 0; i < 300; i += 1) await cache.set(`${i}`, document(i));
    expect(await cache.get('0')).toBeUndefined();
    expect(await cache.get('299')).toBe(document(299));
    const kept = (await Promise.all(Array.from({ length: 300 }, (_, i) => cache.get(`${i}`)))).filter(Boolean).length;
    expect(kept * 60 * 1024).toBeLessThanOrEqual(16 * 1024 * 1024);
  });

  it('refuses to start with a manifest whose ids are not the hashes of their bodies, saying so', () => {
    const folder = mkdtempSync(path.join(tmpdir(), 'trusted-'));
    const file = path.join(folder, 'forged.json');
    writeFileSync(
      file,
      JSON.stringify(persistedQueryManifest([{ id: sha256('{ a }'), name: null, type: 'query', body: '{ me { SvcUserId } }' }])),
    );
    expect(() => readManifest(file)).toThrow(ConfigError);
    expect(() => readManifest(file)).toThrow(/not the SHA-256 of their body/);
    writeFileSync(file, '{"operations": []}');
    expect(() => readManifest(file)).toThrow(/not an apollo-persisted-query-manifest/);
  });
});
