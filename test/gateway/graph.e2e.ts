import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signPrincipal } from '../../platform/security/signed-headers.js';
import { startTestStack, type GraphQLBody, type JsonResponse, type TestStack } from '../support/harness.js';

const PROFILE = /* GraphQL */ `
  query Profile {
    me {
      SvcUserId
      firstName
      lastName
      name {
        firstName
        lastName
      }
      email
      dobYear
      addresses {
        city
        countryCode
        isMain
      }
      cards {
        SvcCardId
        num
        lastFour
        status
        isActive
        isMain
      }
      beneficiaries {
        SvcBeneficiaryId
        name
        accountNumber
        routingNumber
      }
      accounts {
        SvcAccountId
        accountNumber
        transactions(first: 40) {
          edges {
            node {
              transactionId
              amount
              currency
              dtsValue
            }
          }
          pageInfo {
            hasNextPage
            endCursor
          }
        }
      }
      restrictions {
        restrictionName
        txnTypes
        isAllowed
        isIgnoreRest
        priority
      }
    }
  }
`;

interface Profile {
  me: {
    SvcUserId: string;
    firstName: string;
    dobYear: string;
    cards: Array<{ SvcCardId: string; num: string; lastFour: string; status: string }>;
    beneficiaries: Array<{ name: string; accountNumber: string | null }>;
    accounts: Array<{
      SvcAccountId: string;
      accountNumber: string;
      transactions: { edges: Array<{ node: { transactionId: string; dtsValue: string } }>; pageInfo: { hasNextPage: boolean } };
    }>;
    restrictions: Array<{ restrictionName: string; priority: number }>;
  };
}

describe('the federated graph', () => {
  let stack: TestStack;
  let token: string;

  beforeAll(async () => {
    stack = await startTestStack();
    token = await stack.loginDemo();
  });
  afterAll(async () => {
    await stack.stop();
  });

  it('answers one query with the profile, cards, beneficiaries, transactions and restrictions from all four subgraphs', async () => {
    const response = await stack.graphql<Profile>(PROFILE, {}, { token });
    expect(response.status).toBe(200);
    expect(response.body.errors).toBeUndefined();
    const me = response.body.data?.me;
    assert(me);
    expect(me).toMatchObject({ SvcUserId: 'demo_user_1', firstName: 'Dana', dobYear: '1990' });
    expect(me.cards.map((card) => card.SvcCardId)).toEqual(['demo_card_1', 'demo_card_2']);
    expect(me.cards.every((card) => /^5375 \*{4} \*{4} \d{4}$/.test(card.num))).toBe(true);
    expect(me.beneficiaries).toHaveLength(3);
    expect(me.beneficiaries[0]).toMatchObject({ name: 'Landlord LLC', accountNumber: '**** 9921' });
    const [account] = me.accounts;
    assert(account);
    expect(account.accountNumber).toBe('**** 3307');
    expect(account.transactions.edges).toHaveLength(40);
    const dates = account.transactions.edges.map((edge) => Date.parse(edge.node.dtsValue));
    expect(dates).toEqual([...dates].sort((a, b) => b - a));
    // The demo transactions span 14 months.
    expect(dates[0]! - dates.at(-1)!).toBeGreaterThan(400 * 24 * 3600 * 1000);
    expect(me.restrictions.map((r) => r.priority)).toEqual([0, 0, 1, 1]);
  });

  it('pages through transactions with cursors, neither skipping nor repeating one', async () => {
    const query =
      'query ($after: String) { me { accounts { transactions(first: 15, after: $after) { edges { cursor node { transactionId } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } } } }';
    type Page = {
      me: {
        accounts: Array<{
          transactions: {
            edges: Array<{ cursor: string; node: { transactionId: string } }>;
            pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string | null; endCursor: string | null };
          };
        }>;
      };
    };
    const seen: string[] = [];
    let after: string | null = null;
    for (let page = 0; page < 5; page += 1) {
      const response: JsonResponse<GraphQLBody<Page>> = await stack.graphql<Page>(query, { after }, { token });
      const connection = response.body.data?.me.accounts[0]?.transactions;
      assert(connection);
      seen.push(...connection.edges.map((edge) => edge.node.transactionId));
      // A complete PageInfo: the page's first and last cursors, and whether a page came before.
      expect(connection.pageInfo).toMatchObject({
        hasPreviousPage: after !== null,
        startCursor: connection.edges[0]?.cursor,
        endCursor: connection.edges.at(-1)?.cursor,
      });
      if (!connection.pageInfo.hasNextPage) break;
      after = connection.pageInfo.endCursor;
    }
    expect(seen).toHaveLength(40);
    expect(new Set(seen).size).toBe(40);
  });

  it('refuses a page size outside 1-1000 with an error naming the field', async () => {
    const response = await stack.graphql('{ me { accounts { transactions(first: 1001) { edges { cursor } } } } }', {}, { token });
    assert(response.body.errors);
    expect(response.body.errors[0]?.extensions).toMatchObject({ code: 'VALIDATION_FAILED', field: 'first' });
  });

  it('answers `me` without a token as unauthenticated', async () => {
    const response = await stack.graphql('{ me { SvcUserId } }');
    assert(response.body.errors);
    expect(response.body.errors[0]?.extensions?.code).toBe('UNAUTHENTICATED');
  });

  it('answers an operation name the document does not have with 400, before anything runs', async () => {
    const response = await fetch(`${stack.gateway.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', token },
      body: JSON.stringify({ query: 'query Mine { me { SvcUserId } }', operationName: 'Theirs' }),
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as GraphQLBody;
    expect(body.errors?.[0]).toMatchObject({
      message: 'Unknown operation named "Theirs".',
      extensions: { code: 'OPERATION_RESOLUTION_FAILURE' },
    });
  });

  it('refuses with 406 a mutation whose Accept takes no answer type it can send, without running it', async () => {
    const isActive = async () =>
      (await stack.graphql<{ card: { isActive: boolean } }>('{ card(SvcCardId: "demo_card_2") { isActive } }', {}, { token })).body.data
        ?.card.isActive;
    const before = await isActive();
    const turn = (active: boolean | undefined, accept: string) =>
      fetch(`${stack.gateway.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept, token },
        body: JSON.stringify({
          query: `mutation { setCardStatus(SvcCardId: "demo_card_2", onoff: ${active ? 'off' : 'on'}) { isActive } }`,
        }),
      });
    expect((await turn(before, 'text/html')).status).toBe(406);
    expect(await isActive()).toBe(before);
    // The same mutation with an answer type it can send does run (and is turned back).
    expect((await turn(before, 'application/json')).status).toBe(200);
    expect(await isActive()).toBe(!before);
    expect((await turn(!before, 'application/json')).status).toBe(200);
    expect(await isActive()).toBe(before);
  });

  it('refuses an unknown token with 401', async () => {
    const response = await stack.graphql('{ me { SvcUserId } }', {}, { token: 'not-a-token' });
    expect(response.status).toBe(401);
  });

  it.each([
    ['no principal header', {}],
    [
      'a principal signed with another secret',
      {
        'x-internal-principal': signPrincipal({ kind: 'user', userId: 'demo_user_1', sessionId: 's', channel: 'internet' }, 'x'.repeat(40)),
      },
    ],
    [
      'an expired principal',
      {
        'x-internal-principal': signPrincipal(
          { kind: 'user', userId: 'demo_user_1', sessionId: 's', channel: 'internet' },
          'unused',
          Date.now() - 120_000,
        ),
      },
    ],
  ])('has every subgraph refuse a call with %s', async (_name, headers) => {
    for (const service of Object.values(stack.subgraphs)) {
      const response = await fetch(`${service.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ query: '{ _service { sdl } }' }),
      });
      expect(response.status).toBe(401);
      const body = (await response.json()) as { errors: Array<{ extensions: { code: string } }> };
      expect(body.errors[0]?.extensions.code).toBe('UNAUTHENTICATED');
    }
  });

  it("has no subgraph serve a page to a browser: Apollo's landing page loads from a CDN", async () => {
    for (const service of Object.values(stack.subgraphs)) {
      const response = await fetch(`${service.url}/graphql`, { headers: { accept: 'text/html' } });
      const text = await response.text();
      expect(response.headers.get('content-type') ?? '').not.toContain('text/html');
      expect(text).not.toMatch(/<script/i);
    }
  });

  it("hands out no Apollo trace of a subgraph's resolvers, even to a signed call that asks for one", async () => {
    const header = signPrincipal({ kind: 'user', userId: 'demo_user_1', sessionId: 's', channel: 'internet' }, stack.config.internalSecret);
    const response = await fetch(`${stack.subgraphs.cards.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-internal-principal': header, 'apollo-federation-include-trace': 'ftv1' },
      body: JSON.stringify({ query: '{ _service { sdl } }' }),
    });
    const body = (await response.json()) as { data?: unknown; extensions?: Record<string, unknown> };
    expect(body.data).toBeDefined();
    expect(body.extensions?.ftv1).toBeUndefined();
  });

  it('accepts a subgraph call that carries a principal signed with the shared secret', async () => {
    const header = signPrincipal({ kind: 'user', userId: 'demo_user_1', sessionId: 's', channel: 'internet' }, stack.config.internalSecret);
    const response = await fetch(`${stack.subgraphs.cards.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-internal-principal': header },
      body: JSON.stringify({
        query: '{ _entities(representations: [{__typename: "User", SvcUserId: "demo_user_1"}]) { ... on User { cards { SvcCardId } } } }',
      }),
    });
    const body = (await response.json()) as { data: { _entities: Array<{ cards: Array<{ SvcCardId: string }> }> } };
    expect(body.data._entities[0]?.cards).toHaveLength(2);
  });

  it("does not resolve another user's data through entity references", async () => {
    const header = signPrincipal(
      { kind: 'user', userId: 'someone_else', sessionId: 's', channel: 'internet' },
      stack.config.internalSecret,
    );
    const response = await fetch(`${stack.subgraphs.cards.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-internal-principal': header },
      body: JSON.stringify({
        query: '{ _entities(representations: [{__typename: "Card", SvcCardId: "demo_card_1"}]) { ... on Card { num } } }',
      }),
    });
    const body = (await response.json()) as { data: { _entities: unknown[] } };
    expect(body.data._entities).toEqual([null]);
  });

  it.each([
    ['a user principal', { kind: 'user', userId: 'demo_user_1', sessionId: 's', channel: 'internet' } as const, 'gateway' as const, true],
    ['a service principal signed for the subgraphs', { kind: 'service', service: 'payments' } as const, 'subgraph' as const, true],
    ['a service principal of an unknown service', { kind: 'service', service: 'intruder' } as const, 'gateway' as const, true],
    ['a service principal signed with another secret', { kind: 'service', service: 'payments' } as const, 'gateway' as const, false],
  ])('has the gateway refuse %s in x-internal-principal', async (_name, principal, audience, rightSecret) => {
    const header = signPrincipal(principal, rightSecret ? stack.config.internalSecret : 'z'.repeat(40), Date.now(), audience);
    const response = await stack.graphql('{ transactionTypes { name } }', {}, { 'x-internal-principal': header });
    expect(response.status).toBe(401);
  });

  it('accepts a subgraph calling the graph with a service principal signed for the gateway', async () => {
    const header = signPrincipal({ kind: 'service', service: 'payments' }, stack.config.internalSecret, Date.now(), 'gateway');
    const response = await stack.graphql<{ transactionTypes: unknown[] }>(
      '{ transactionTypes { name } }',
      {},
      { 'x-internal-principal': header },
    );
    expect(response.body.data?.transactionTypes).toHaveLength(7);
  });

  it('carries the request id from the REST adapter through the gateway to the subgraphs', async () => {
    const requestId = `trace_${Date.now()}`;
    const response = await stack.rest('PUT', '/token', {
      headers: { 'x-request-id': requestId },
      body: { channel: 'internet', userName: 'demo.user', password: 'Demo#Pass2026' },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-request-id')).toBe(requestId);
    const services = new Set(stack.logs.filter((line) => line.requestId === requestId).map((line) => line.service));
    expect(services).toEqual(new Set(['rest-adapter', 'gateway', 'user-subgraph']));
  });

  it('serves /health and /ready on every server', async () => {
    for (const service of [stack.restAdapter, stack.gateway, ...Object.values(stack.subgraphs)]) {
      const health = await fetch(`${service.url}/health`);
      expect(health.status).toBe(200);
      const ready = await fetch(`${service.url}/ready`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toMatchObject({ status: 'ready' });
    }
  });
});
