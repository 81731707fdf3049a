import { composeServices } from '@apollo/composition';
import { buildSubgraphSchema } from '@apollo/subgraph';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { execute, getOperationAST, parse, type ExecutionResult } from 'graphql';
import { QueryPlanner } from '@apollo/query-planner';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { GatewayContext } from '../../../gateway/src/context.js';
import { createFederation } from '../../../gateway/src/execution/federation.js';
import { createDocumentReader } from '../../../gateway/src/pipeline/documents.js';
import { createOperationPipeline } from '../../../gateway/src/pipeline/operation.js';
import type { Subgraph, SubgraphAnswer, SubgraphOperation } from '../../../gateway/src/execution/plan-execution.js';
import { createLogger } from '../../../platform/runtime/logger.js';

// The federation's executor over two subgraphs served in this process by Apollo's subgraph
// library: the plans it runs, the answers it shapes, and the errors it passes on.

const ACCOUNTS = `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.3", import: ["@key"])
  type Query { users: [User] me: User! node(id: ID!): Node }
  type Mutation { rename(id: ID!, name: String!): User }
  interface Node { id: ID! }
  type User implements Node @key(fields: "id") { id: ID! name: String! nickname: String status: Status }
  type Branch implements Node { id: ID! city: String }
  enum Status { ACTIVE CLOSED }
`;
const CARDS = `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.3", import: ["@key"])
  type User @key(fields: "id") { id: ID! cards(first: Int = 2): [Card!]! }
  type Card { last4: String! label: String }
`;

interface Row {
  id: string;
  name: string;
  nickname?: string;
  status: string | null;
}
let users: Row[] = [];
const cardsOf = new Map<string, Array<{ last4: string | null; label: string | null }>>();

const accountsSchema = buildSubgraphSchema({
  typeDefs: parse(ACCOUNTS),
  resolvers: {
    Query: {
      users: () => users,
      me: () => users[0],
      node: (_: unknown, { id }: { id: string }) =>
        id.startsWith('b') ? { __typename: 'Branch', id, city: 'Lyon' } : users.find((u) => u.id === id),
    },
    Mutation: {
      rename: (_: unknown, { id, name }: { id: string; name: string }) => {
        const user = users.find((u) => u.id === id);
        if (user) user.name = name;
        return user;
      },
    },
    Node: { __resolveType: (node: { __typename?: string }) => node.__typename ?? 'User' },
    User: { __resolveReference: (ref: { id: string }) => users.find((u) => u.id === ref.id) },
  },
});
const cardsSchema = buildSubgraphSchema({
  typeDefs: parse(CARDS),
  resolvers: {
    User: {
      __resolveReference: (ref: { id: string }) => ({ id: ref.id }),
      cards: (user: { id: string }, { first }: { first: number }) => (cardsOf.get(user.id) ?? []).slice(0, first),
    },
  },
});

/** What each subgraph was sent, and answers a test may put in place of the subgraph's own. */
const sent: Array<{ subgraph: string } & SubgraphOperation> = [];
const overrides = new Map<string, (operation: SubgraphOperation) => Promise<SubgraphAnswer>>();

function served(name: string, schema: ReturnType<typeof buildSubgraphSchema>): Subgraph {
  return {
    async send(operation) {
      sent.push({ subgraph: name, ...operation });
      const override = overrides.get(name);
      if (override) return override(operation);
      const result: ExecutionResult = await execute({ schema, document: parse(operation.query), variableValues: operation.variables });
      return JSON.parse(JSON.stringify(result)) as SubgraphAnswer;
    },
  };
}

/** What the federation logged. */
const logged: Array<Record<string, unknown>> = [];

const composed = composeServices([
  { name: 'accounts', typeDefs: parse(ACCOUNTS), url: 'http://accounts.invalid/graphql' },
  { name: 'cards', typeDefs: parse(CARDS), url: 'http://cards.invalid/graphql' },
]);
if (!composed.supergraphSdl) throw new Error(`composition failed: ${composed.errors?.map((e) => e.message).join('; ')}`);
const federation = createFederation(
  composed.supergraphSdl,
  new Map([
    ['accounts', served('accounts', accountsSchema)],
    ['cards', served('cards', cardsSchema)],
  ]),
  createLogger('warn', {}, (line) => void logged.push(JSON.parse(line) as Record<string, unknown>)),
);
const server = createOperationPipeline<GatewayContext>({
  schema: federation.apiSchema,
  documents: createDocumentReader({ schema: federation.apiSchema, parseOptions: {}, introspection: true, hideSchemaDetails: false }),
  execute: federation.execute,
  plugins: [],
  errors: { formatError: (formatted) => formatted, includeStacktrace: false },
  persistedQueries: { get: async () => undefined, set: async () => {} },
  logger: createLogger('silent'),
});

const context: GatewayContext = {
  principal: { kind: 'anonymous' },
  sessionConfirmed: null,
  requestId: 'req-1',
  clientIp: '203.0.113.9',
  operationKey: null,
  fieldsCounted: false,
};

async function run(query: string, variables?: Record<string, unknown>) {
  const response = await server.run({ query, variables }, context);
  if (response.body.kind !== 'single') throw new Error('an incremental answer');
  return JSON.parse(JSON.stringify(response.body.singleResult)) as {
    data?: Record<string, unknown> | null;
    errors?: Array<{ message: string; path?: Array<string | number>; extensions?: Record<string, unknown> }>;
    extensions?: Record<string, unknown>;
  };
}

describe('the federation executor', () => {
  beforeEach(() => {
    users = [
      { id: 'u1', name: 'Dana', status: 'ACTIVE' },
      { id: 'u2', name: 'Eli', status: null },
      { id: 'u3', name: 'Fay', status: 'CLOSED' },
    ];
    cardsOf.clear();
    cardsOf.set('u1', [
      { last4: '1111', label: 'main' },
      { last4: '2222', label: null },
      { last4: '3333', label: 'spare' },
    ]);
    cardsOf.set('u3', [{ last4: '4444', label: null }]);
    sent.length = 0;
    overrides.clear();
    logged.length = 0;
  });

  it('joins subgraphs and answers in the order and names the client asked, without the keys the plan fetched for itself', async () => {
    const result = await run(
      `query Q($all: Boolean!, $skipName: Boolean = false) {
        people: users { ...Who cards(first: 3) @include(if: $all) { last4 } kind: __typename }
        me { name name @skip(if: $skipName) cards { label } }
      }
      fragment Who on User { name status }`,
      { all: true },
    );
    expect(result.errors).toBeUndefined();
    expect(JSON.stringify(result.data)).toBe(
      JSON.stringify({
        people: [
          { name: 'Dana', status: 'ACTIVE', cards: [{ last4: '1111' }, { last4: '2222' }, { last4: '3333' }], kind: 'User' },
          { name: 'Eli', status: null, cards: [], kind: 'User' },
          { name: 'Fay', status: 'CLOSED', cards: [{ last4: '4444' }], kind: 'User' },
        ],
        me: { name: 'Dana', cards: [{ label: 'main' }, { label: null }] },
      }),
    );
    // One fetch of the root fields, then the cards of both lists, each a fetch of its own.
    expect(sent.map((s) => s.subgraph).sort()).toEqual(['accounts', 'cards', 'cards']);
    sent.length = 0;
    const withoutCards = await run(`query Q($all: Boolean!) { users { name cards @include(if: $all) { last4 } } }`, { all: false });
    expect(withoutCards.data).toEqual({ users: [{ name: 'Dana' }, { name: 'Eli' }, { name: 'Fay' }] });
    // The plan's condition leaves the cards fetch out.
    expect(sent.map((s) => s.subgraph)).toEqual(['accounts']);
  });

  it('answers the fragments of an interface by the type each object is', async () => {
    const result = await run(`{
      user: node(id: "u3") { __typename id ... on User { name } ... on Branch { city } }
      branch: node(id: "b1") { __typename id ... on User { name } ... on Branch { city } }
    }`);
    expect(result.data).toEqual({
      user: { __typename: 'User', id: 'u3', name: 'Fay' },
      branch: { __typename: 'Branch', id: 'b1', city: 'Lyon' },
    });
  });

  it('answers two fields under one name in sibling fragments, which the plan fetches under an alias of its own', async () => {
    users[2]!.nickname = 'Fifi';
    const result = await run(`{
      user: node(id: "u3") { ... on User { label: nickname } ... on Branch { label: city } }
      branch: node(id: "b1") { ... on User { label: nickname } ... on Branch { label: city } }
    }`);
    expect(result).toEqual({ data: { user: { label: 'Fifi' }, branch: { label: 'Lyon' } } });
  });

  it('answers introspection beside other fields, in a fragment too', async () => {
    const result = await run(
      `{
        ...Root
        me { name }
        status: __type(name: "Status") { ...Values }
      }
      fragment Root on Query { user: __type(name: "User") { name } }
      fragment Values on __Type { enumValues { name } }`,
    );
    expect(result).toEqual({
      data: { user: { name: 'User' }, me: { name: 'Dana' }, status: { enumValues: [{ name: 'ACTIVE' }, { name: 'CLOSED' }] } },
    });
  });

  it('answers an error, not a failure, when a subgraph answers a value of the wrong kind', async () => {
    overrides.set('accounts', async () => ({ data: { users: { not: 'a list' } } }));
    const result = await run(`{ users { name } }`);
    expect(result.data).toBeNull();
    expect(result.errors).toHaveLength(1);
  });

  it('plans an operation once, whatever its variables, and again for another operation of the same document', async () => {
    const planned = vi.spyOn(QueryPlanner.prototype, 'buildQueryPlan');
    try {
      const document = `query A($first: Int) { me { cards(first: $first) { last4 } } } query B { me { name } }`;
      const answers = [];
      for (const first of [1, 2, 3])
        answers.push((await server.run({ query: document, operationName: 'A', variables: { first } }, context)).body);
      expect(
        answers.map((body) => (body.kind === 'single' ? (body.singleResult.data?.me as { cards: unknown[] }).cards.length : -1)),
      ).toEqual([1, 2, 3]);
      expect(planned).toHaveBeenCalledTimes(1);
      await server.run({ query: document, operationName: 'B' }, context);
      expect(planned).toHaveBeenCalledTimes(2);
    } finally {
      planned.mockRestore();
    }
  });

  it('keeps an alias named __proto__ as a field of the answer, and pollutes no prototype', async () => {
    // The inner alias's list comes from another subgraph, merged into the object the first one answered.
    const result = await run(`{ __proto__: me { valueOf: name constructor: __typename __proto__: cards { last4 } } }`);
    expect(Object.keys(result.data!)).toEqual(['__proto__']);
    const me = Object.getOwnPropertyDescriptor(result.data, '__proto__')?.value as Record<string, unknown>;
    expect(Object.keys(me)).toEqual(['valueOf', 'constructor', '__proto__']);
    expect([Object.getOwnPropertyDescriptor(me, 'valueOf')?.value, Object.getOwnPropertyDescriptor(me, 'constructor')?.value]).toEqual([
      'Dana',
      'User',
    ]);
    expect(Object.getOwnPropertyDescriptor(me, '__proto__')?.value).toEqual([{ last4: '1111' }, { last4: '2222' }]);
  });

  it("reports a subgraph's value the API schema does not allow, and makes the nearest nullable parent null", async () => {
    overrides.set('accounts', async () => ({
      data: {
        users: [
          { __typename: 'User', id: 'u1', name: null, status: 'ACTIVE' },
          { __typename: 'User', id: 'u2', name: 'Eli', status: 'FROZEN' },
        ],
      },
    }));
    const result = await run(`{ users { name status } }`);
    expect(result.errors).toBeUndefined();
    expect(result.data).toEqual({ users: [null, { name: 'Eli', status: null }] });
    expect(result.extensions?.valueCompletion).toEqual([
      expect.objectContaining({ message: 'Cannot return null for non-nullable field User.name.', path: ['users', 0, 'name'] }),
      expect.objectContaining({ message: 'Invalid value found for field User.status.', path: ['users', 1, 'status'] }),
    ]);
  });

  it("passes an entity fetch's errors on at the path of the object in the client's answer, naming the subgraph", async () => {
    users.splice(1, 0, { id: 'gone', name: 'Gus', status: null });
    overrides.set('cards', async (operation) => {
      const representations = operation.variables.representations as Array<{ id: string }>;
      return {
        data: { _entities: representations.map((r) => (r.id === 'u3' ? null : { cards: [] })) },
        errors: [
          { message: 'card store down', path: ['_entities', 3, 'cards'], extensions: { code: 'UNAVAILABLE' } },
          { message: 'no code', path: ['_entities', 0] },
        ],
      };
    });
    const result = await run(`{ users { name cards { last4 } } }`);
    expect(result.errors).toEqual([
      expect.objectContaining({
        message: 'card store down',
        path: ['users', 3, 'cards'],
        extensions: { code: 'UNAVAILABLE', serviceName: 'cards' },
      }),
      expect.objectContaining({ message: 'no code', path: ['users', 0], extensions: { code: 'INTERNAL', serviceName: 'cards' } }),
    ]);
    // Only the error without a code is logged, with the subgraph's own message (the client gets INTERNAL's generic one from formatError).
    expect(logged.map(({ msg, subgraph, error }) => ({ msg, subgraph, error }))).toEqual([
      { msg: 'a subgraph answered an error without a code', subgraph: 'cards', error: 'no code' },
    ]);
    // The entity a subgraph could not answer is null: its non-null cards make the whole list element null.
    expect(result.data).toEqual({ users: [{ name: 'Dana', cards: [] }, { name: 'Gus', cards: [] }, { name: 'Eli', cards: [] }, null] });
  });

  it('answers the other fields when a subgraph cannot be reached, with its error', async () => {
    overrides.set('cards', () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:4002')));
    const result = await run(`{ users { name cards { last4 } } }`);
    expect(result.data).toEqual({ users: [null, null, null] });
    expect(result.errors).toHaveLength(1);
    expect(result.errors![0]!.message).toBe('connect ECONNREFUSED 127.0.0.1:4002');
  });

  it('tells the subgraphs a mutation from a query, and refuses variables of the wrong type before any fetch', async () => {
    const renamed = await run(`mutation R($id: ID!) { rename(id: $id, name: "Dee") { name cards { last4 } } }`, { id: 'u1' });
    expect(renamed.data).toEqual({ rename: { name: 'Dee', cards: [{ last4: '1111' }, { last4: '2222' }] } });
    expect(sent.map((s) => [s.subgraph, s.mutation])).toEqual([
      ['accounts', true],
      ['cards', true],
    ]);
    sent.length = 0;
    const refused = await run(`query U($first: Int) { me { cards(first: $first) { last4 } } }`, { first: 'many' });
    expect(refused.errors?.[0]?.message).toMatch(/\$first/);
    expect(sent).toEqual([]);
  });
});

describe('the operations the federation makes ready', () => {
  it('are kept no longer than their document, whose whole text one can hold on to', async () => {
    setFlagsFromString('--expose-gc');
    const collectGarbage = runInNewContext('gc') as () => void;
    const PROFILES = `
      extend schema @link(url: "https://specs.apollo.dev/federation/v2.3", import: ["@key"])
      type Query { me: User! }
      type User @key(fields: "id") { id: ID! name: String! }
    `;
    const supergraph = composeServices([{ name: 'profiles', typeDefs: parse(PROFILES), url: 'http://profiles.invalid/graphql' }]);
    // A field the caller may not see: the subgraph refuses it, and the answer is its error.
    const refusing: Subgraph = {
      send: async () => ({ data: null, errors: [{ message: 'Not for you.', extensions: { code: 'FORBIDDEN' } }] }),
    };
    const own = createFederation(supergraph.supergraphSdl!, new Map([['profiles', refusing]]), createLogger('silent'));
    collectGarbage();
    const before = process.memoryUsage().heapUsed;
    // Names of 13 characters or more are slices of the document's text: whatever keeps one keeps all of it.
    // Refused by the subgraph, each operation made ready held its own.
    for (let i = 0; i < 64; i += 1) {
      const document = parse(`query LongOperationName${i} { someLongAliasName: me { anotherLongAlias: name # ${'x'.repeat(1 << 20)}\n } }`);
      const result = await own.execute({
        schema: own.apiSchema,
        document,
        operation: getOperationAST(document)!,
        operationName: `LongOperationName${i}`,
        variables: {},
        contextValue: context,
      });
      expect(result.errors?.map((error) => error.message)).toEqual(['Not for you.']);
    }
    for (let i = 0; i < 3; i += 1) {
      collectGarbage();
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    // Kept by the documents' hashes, the 64 operations held 64 MiB of text; kept with their documents, nothing once those are gone.
    expect((process.memoryUsage().heapUsed - before) / 2 ** 20).toBeLessThan(16);
  });
});
