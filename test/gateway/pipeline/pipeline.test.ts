import type { IncomingHttpHeaders } from 'node:http';
import { ApolloServer, HeaderMap, type BaseContext } from '@apollo/server';
import { ApolloServerPluginCacheControlDisabled, ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import { buildSchema, execute, GraphQLError, type GraphQLFormattedError } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDocumentReader } from '../../../gateway/src/pipeline/documents.js';
import { createHttpAnswerer } from '../../../gateway/src/pipeline/http.js';
import { createOperationPipeline } from '../../../gateway/src/pipeline/operation.js';
import type { RequestPlugin } from '../../../platform/graphql/request-plugin.js';
import { createLogger } from '../../../platform/runtime/logger.js';
import { sha256 } from '../../../platform/security/secrets.js';

// The gateway's operation pipeline against Apollo Server's, on the same schema, plugins and
// requests: every status, header and body must be the same, refusals and edge cases above all.

const typeDefs = `
  type Query { hello(name: String!): String, boom: String, refused: String, me: User }
  type User { id: ID!, name: String }
  type Mutation { set(x: Int!): Int }
`;
const rootValue = {
  hello: (args: { name: string }) => `hello ${args.name}`,
  boom: () => {
    throw new GraphQLError('it broke here', {
      extensions: { code: 'BROKEN', http: { status: 503, headers: new HeaderMap([['retry-after', '5']]) } },
    });
  },
  me: () => ({ id: 'u1', name: 'Dana' }),
  set: (args: { x: number }) => args.x,
};
const schema = buildSchema(typeDefs);

/** A plugin with every hook the pipeline runs: refusals by operation name, a stand-in answer, and a header set at the end. */
const plugin: RequestPlugin<BaseContext> = {
  async requestDidStart() {
    return {
      async didResolveOperation({ operationName }) {
        if (operationName === 'Forbidden')
          throw new GraphQLError('not for you', { extensions: { code: 'FORBIDDEN', http: { status: 403 } } });
        if (operationName === 'Broken') throw new TypeError('a plugin failed');
      },
      async responseForOperation({ operationName }) {
        if (operationName !== 'Replayed') return null;
        return {
          http: { status: 201, headers: new HeaderMap([['x-replayed', 'yes']]) },
          body: { kind: 'single', singleResult: { data: { hello: 'again' } } },
        };
      },
      async willSendResponse({ response }) {
        response.http.headers.set('x-seen', String(response.http.status ?? 200));
      },
    };
  },
};

/** What a plugin saw of one request, hook by hook, in the order the hooks ran. */
type Seen = unknown[][];

/** A plugin that writes down what each hook is given: the same requests must show it the same things. */
function recorder(seen: Seen): RequestPlugin<BaseContext> {
  return {
    async requestDidStart({ request }) {
      seen.push([
        'requestDidStart',
        request.operationName ?? null,
        request.http?.method ?? null,
        request.http?.headers.get('accept') ?? null,
      ]);
      return {
        async didResolveOperation({ queryHash, operationName, source, operation, metrics }) {
          seen.push([
            'didResolveOperation',
            queryHash,
            operationName,
            source,
            operation?.operation ?? null,
            metrics.persistedQueryHit ?? null,
          ]);
        },
        async responseForOperation({ operationName, document }) {
          seen.push(['responseForOperation', operationName, document.definitions.length]);
          return null;
        },
        async didEncounterErrors({ errors, operationName }) {
          seen.push(['didEncounterErrors', operationName ?? null, errors.map((error) => [error.message, error.extensions.code ?? null])]);
          if (operationName === 'Unlucky') throw new TypeError('a listener of errors failed');
        },
        async willSendResponse({ response, queryHash, errors }) {
          seen.push(['willSendResponse', response.http.status ?? null, queryHash, errors?.length ?? 0]);
        },
      };
    },
  };
}

const formatError = (formatted: GraphQLFormattedError): GraphQLFormattedError =>
  formatted.extensions?.code === 'INTERNAL_SERVER_ERROR'
    ? { message: 'Internal server error', extensions: { code: 'INTERNAL' } }
    : formatted;

function both(introspection: boolean) {
  const seen = { apollo: [] as Seen, ours: [] as Seen };
  const apollo = new ApolloServer<BaseContext>({
    schema,
    rootValue,
    introspection,
    hideSchemaDetailsFromClientErrors: !introspection,
    parseOptions: { maxLexicalTokens: 500 },
    includeStacktraceInErrorResponses: false,
    formatError,
    // As the gateway ran it: no cache hints (every answer is no-store at the HTTP server) and no landing page.
    plugins: [ApolloServerPluginCacheControlDisabled(), ApolloServerPluginLandingPageDisabled(), plugin, recorder(seen.apollo)],
    csrfPrevention: true,
    allowBatchedHttpRequests: false,
    logger: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
  });
  const registered = new Map<string, string>();
  const errors = { formatError, includeStacktrace: false };
  const pipeline = createOperationPipeline<BaseContext>({
    schema,
    documents: createDocumentReader({ schema, parseOptions: { maxLexicalTokens: 500 }, introspection, hideSchemaDetails: !introspection }),
    execute: async (request) =>
      execute({
        schema,
        rootValue,
        document: request.document,
        operationName: request.operationName,
        variableValues: request.variables,
        contextValue: {},
      }),
    plugins: [plugin, recorder(seen.ours)],
    errors,
    persistedQueries: { get: async (hash) => registered.get(hash), set: async (hash, text) => void registered.set(hash, text) },
    logger: createLogger('silent'),
  });
  const ours = createHttpAnswerer(pipeline, errors);
  return { apollo, ours, seen };
}

interface Sent {
  method?: string;
  headers?: IncomingHttpHeaders;
  search?: string;
  body?: unknown;
  /** The context refuses the request: with a GraphQL error (its status) or an unexpected one. */
  context?: 'refused' | 'broken' | 'thrown';
  /**
   * Where the plugins see less than under Apollo Server, by design: `refused first` is refused
   * (406) before the operation runs, where Apollo ran it first; `no operation` has no operation to
   * hand `responseForOperation`, which Apollo calls all the same.
   */
  plugins?: 'refused first' | 'no operation';
}

const JSON_POST = { 'content-type': 'application/json' };
const contextOf = (sent: Sent) => async (): Promise<BaseContext> => {
  if (sent.context === 'refused') throw new GraphQLError('who are you', { extensions: { code: 'UNAUTHENTICATED', http: { status: 401 } } });
  if (sent.context === 'broken') throw new TypeError('lookup failed');
  // A thrown value that is not an Error, which a careless library may do.
  // eslint-disable-next-line @typescript-eslint/only-throw-error
  if (sent.context === 'thrown') throw 'lookup failed';
  return {};
};

async function answersOf(pair: ReturnType<typeof both>, sent: Sent) {
  const method = sent.method ?? 'POST';
  const headers = sent.headers ?? JSON_POST;
  const map = new HeaderMap();
  for (const [name, value] of Object.entries(headers)) if (typeof value === 'string') map.set(name, value);
  const theirs = await pair.apollo.executeHTTPGraphQLRequest({
    httpGraphQLRequest: { method, headers: map, search: sent.search ?? '', body: sent.body },
    context: contextOf(sent),
  });
  const ours = await pair.ours({ method, headers, search: sent.search ?? '', body: sent.body }, contextOf(sent));
  if (theirs.body.kind !== 'complete') throw new Error('a chunked answer');
  return {
    apollo: { status: theirs.status ?? 200, headers: Object.fromEntries(theirs.headers), body: JSON.parse(theirs.body.string) as unknown },
    ours: { status: ours.status, headers: ours.headers, body: JSON.parse(ours.body) as unknown },
  };
}

const APQ_TEXT = '{ hello(name: "apq") }';
const CASES: Array<[string, Sent]> = [
  ['a query', { body: { query: '{ hello(name: "a") me { id name } }' } }],
  [
    'variables and an operation name',
    { body: { query: 'query Q($n: String!) { hello(name: $n) }', variables: { n: 'v' }, operationName: 'Q' } },
  ],
  ['a mutation', { body: { query: 'mutation { set(x: 3) }' } }],
  ['a resolver error with its own status and header', { body: { query: '{ boom hello(name: "b") }' } }],
  ['a field that resolves to null', { body: { query: '{ refused }' } }],
  [
    'GraphQL over HTTP media type asked for',
    { headers: { ...JSON_POST, accept: 'application/graphql-response+json' }, body: { query: '{ me { id } }' } },
  ],
  [
    'JSON preferred by weight',
    { headers: { ...JSON_POST, accept: 'application/graphql-response+json;q=0.5, application/json' }, body: { query: '{ me { id } }' } },
  ],
  ['any type accepted', { headers: { ...JSON_POST, accept: '*/*' }, body: { query: '{ me { id } }' } }],
  [
    'a range and a type at the same weight',
    { headers: { ...JSON_POST, accept: 'application/*;q=0.8, application/graphql-response+json;q=0.8' }, body: { query: '{ me { id } }' } },
  ],
  [
    'neither type accepted (406)',
    { headers: { ...JSON_POST, accept: 'text/html' }, body: { query: '{ me { id } }' }, plugins: 'refused first' },
  ],
  [
    'JSON refused by a zero weight',
    { headers: { ...JSON_POST, accept: 'application/json;q=0' }, body: { query: '{ me { id } }' }, plugins: 'refused first' },
  ],
  ['a simple cross-site POST (CSRF)', { headers: { 'content-type': 'text/plain' }, body: { query: '{ me { id } }' } }],
  ['a GET without a preflight header (CSRF)', { method: 'GET', headers: {}, search: '?query=%7Bme%7Bid%7D%7D' }],
  ['a GET with a preflight header', { method: 'GET', headers: { 'apollo-require-preflight': 'true' }, search: '?query=%7Bme%7Bid%7D%7D' }],
  [
    'a GET with a JSON content type and variables',
    {
      method: 'GET',
      headers: JSON_POST,
      search: `?query=${encodeURIComponent('query Q($n: String!) { hello(name: $n) }')}&variables=${encodeURIComponent('{"n":"g"}')}`,
    },
  ],
  [
    'a GET with another content type (415)',
    { method: 'GET', headers: { 'content-type': 'application/xml', 'apollo-require-preflight': '1' }, search: '?query=%7Bme%7Bid%7D%7D' },
  ],
  ['a GET mutation (405)', { method: 'GET', headers: JSON_POST, search: `?query=${encodeURIComponent('mutation { set(x: 1) }')}` }],
  ['a GET with a parameter twice', { method: 'GET', headers: JSON_POST, search: '?query=%7Bme%7Bid%7D%7D&query=%7Bme%7Bid%7D%7D' }],
  ['a GET with variables that are not JSON', { method: 'GET', headers: JSON_POST, search: '?query=%7Bme%7Bid%7D%7D&variables=%7B' }],
  ['a GET with variables that are a list', { method: 'GET', headers: JSON_POST, search: '?query=%7Bme%7Bid%7D%7D&variables=%5B%5D' }],
  ['a PUT (405)', { method: 'PUT', body: { query: '{ me { id } }' } }],
  ['a batch', { body: [{ query: '{ me { id } }' }] }],
  ['an empty object', { body: {} }],
  ['no body', { body: undefined }],
  ['an empty query', { body: { query: '' } }],
  ['a query that is a number', { body: { query: 7 } }],
  ['a query that is a parsed document', { body: { query: { kind: 'Document', definitions: [] } } }],
  ['variables as a string', { body: { query: '{ me { id } }', variables: '{}' } }],
  ['variables as a list', { body: { query: '{ me { id } }', variables: [] } }],
  ['extensions as a string', { body: { query: '{ me { id } }', extensions: '{}' } }],
  ['extensions as a list', { body: { query: '{ me { id } }', extensions: [1] } }],
  ['an operation name that is a number', { body: { query: '{ me { id } }', operationName: 4 } }],
  ['a syntax error', { body: { query: '{ me { id }' } }],
  ['too many tokens', { body: { query: `{ ${'me { id } '.repeat(200)} }` } }],
  ['a validation error with a suggestion', { body: { query: '{ helo(name: "x") }' } }],
  ['introspection', { body: { query: '{ __schema { queryType { name } } }' } }],
  ['an unknown operation name', { body: { query: 'query A { me { id } }', operationName: 'B' }, plugins: 'no operation' }],
  ['two operations and no name', { body: { query: 'query A { me { id } } query B { me { name } }' }, plugins: 'no operation' }],
  ['a variable of the wrong type', { body: { query: 'query Q($n: String!) { hello(name: $n) }', variables: { n: 5 } } }],
  ['a missing variable', { body: { query: 'query Q($n: String!) { hello(name: $n) }' } }],
  ['an unknown persisted query', { body: { extensions: { persistedQuery: { version: 1, sha256Hash: 'f'.repeat(64) } } } }],
  [
    'a persisted query registered',
    { body: { query: APQ_TEXT, extensions: { persistedQuery: { version: 1, sha256Hash: sha256(APQ_TEXT) } } } },
  ],
  ['a persisted query by its hash', { body: { extensions: { persistedQuery: { version: 1, sha256Hash: sha256(APQ_TEXT) } } } }],
  [
    'a persisted query whose hash does not match',
    { body: { query: '{ me { id } }', extensions: { persistedQuery: { version: 1, sha256Hash: 'a'.repeat(64) } } } },
  ],
  [
    'a persisted query of another version',
    { body: { query: '{ me { id } }', extensions: { persistedQuery: { version: 2, sha256Hash: 'a' } } } },
  ],
  ['a persisted query with a hash that is a number', { body: { extensions: { persistedQuery: { version: 1, sha256Hash: 12 } } } }],
  ['a plugin refusing with its status', { body: { query: 'query Forbidden { me { id } }' } }],
  ['a plugin failing unexpectedly', { body: { query: 'query Broken { me { id } }' } }],
  ['a plugin answering in the operation’s place', { body: { query: 'query Replayed { me { id } }' } }],
  ['a context refusing with its status', { body: { query: '{ me { id } }' }, context: 'refused' }],
  ['a context failing unexpectedly', { body: { query: '{ me { id } }' }, context: 'broken' }],
  ['an empty operation name', { body: { query: 'query A { me { id } }', operationName: '' }, plugins: 'no operation' }],
  [
    'a persisted query whose hash is a list holding the right one',
    { body: { query: APQ_TEXT, extensions: { persistedQuery: { version: 1, sha256Hash: [sha256(APQ_TEXT)] } } } },
  ],
  ['a context throwing something that is not an Error', { body: { query: '{ me { id } }' }, context: 'thrown' }],
  ['a listener of errors failing', { body: { query: 'query Unlucky { boom }' } }],
  ['an empty weight', { headers: { ...JSON_POST, accept: 'application/json;q=' }, body: { query: '{ me { id } }' } }],
  [
    'a parameter after the weight',
    {
      headers: { ...JSON_POST, accept: 'application/json;q=1;charset=latin1' },
      body: { query: '{ me { id } }' },
      plugins: 'refused first',
    },
  ],
  [
    'a parameter twice',
    { headers: { ...JSON_POST, accept: 'application/json; charset=utf-8; charset=latin1' }, body: { query: '{ me { id } }' } },
  ],
  [
    'a comma inside quotes',
    {
      headers: { ...JSON_POST, accept: 'text/html; x="a, application/json;b"' },
      body: { query: '{ me { id } }' },
      plugins: 'refused first',
    },
  ],
  [
    'an escaped quoted value',
    { headers: { ...JSON_POST, accept: 'application/json; charset="utf\\-8"' }, body: { query: '{ me { id } }' } },
  ],
  [
    'a parameter without a name',
    {
      headers: { ...JSON_POST, accept: 'application/json;=x' },
      body: { query: '{ me { id } }' },
      plugins: 'refused first',
    },
  ],
  ['an unclosed quote', { headers: { ...JSON_POST, accept: 'application/json; charset="utf-8' }, body: { query: '{ me { id } }' } }],
  [
    'a range without a slash first',
    { headers: { ...JSON_POST, accept: 'json, application/graphql-response+json' }, body: { query: '{ me { id } }' } },
  ],
  [
    'upper case and spaces',
    {
      headers: { ...JSON_POST, accept: ' Application/GraphQL-Response+JSON ; Q=0.5 , application/JSON;q=0.4' },
      body: { query: '{ me { id } }' },
    },
  ],
  ['a subscription operation name on a query', { body: { query: 'query valueOf { me { id } }', operationName: 'valueOf' } }],
];

describe.each([true, false])('the operation pipeline, introspection %s', (introspection) => {
  const pair = both(introspection);
  beforeAll(() => pair.apollo.start());
  afterAll(() => pair.apollo.stop());

  it.each(CASES)('answers %s as Apollo Server does, its plugins seeing the same', async (_, sent) => {
    pair.seen.apollo.length = 0;
    pair.seen.ours.length = 0;
    const { apollo, ours } = await answersOf(pair, sent);
    expect(ours).toEqual(apollo);
    if (sent.plugins === 'refused first') expect(pair.seen.ours).toEqual([]);
    else if (sent.plugins === 'no operation')
      expect(pair.seen.ours).toEqual(pair.seen.apollo.filter(([hook]) => hook !== 'responseForOperation'));
    else expect(pair.seen.ours).toEqual(pair.seen.apollo);
  });
});

describe('the documents kept', () => {
  const read = () => createDocumentReader({ schema, parseOptions: {}, introspection: true, hideSchemaDetails: false });

  it('reads a document once and answers the same one while it is kept, the least recently used out past 1,000', () => {
    const documents = read();
    const text = (i: number) => `query Q${i} { hello(name: "${i}") }`;
    const first = documents(text(0));
    expect(documents(text(0))).toBe(first);
    expect(first).toMatchObject({ queryHash: sha256(text(0)) });
    for (let i = 1; i <= 1_000; i += 1) documents(text(i));
    // The 1,001st pushed out the oldest: it is read again, into a new document.
    expect(documents(text(0))).not.toBe(first);
    const recent = documents(text(1_000));
    expect(documents(text(1_000))).toBe(recent);
  });

  it('keeps at most 100,000 tokens, however short their text', () => {
    const documents = read();
    // About 2,000 tokens (comments) in 4 KiB each: a parsed document keeps every one of them.
    const dense = (i: number) => `query Q${i} { hello(name: "${i}") }${'\n#'.repeat(2_000)}`;
    const first = documents(dense(0));
    for (let i = 1; i < 50; i += 1) documents(dense(i));
    expect(documents(dense(1))).toBe(documents(dense(1)));
    expect(documents(dense(0))).not.toBe(first);
  });

  it('keeps at most 4 MiB of text, and keeps no document it refused', () => {
    const documents = read();
    const big = (i: number) => `query Q${i} { hello(name: "${i}") } # ${'x'.repeat(256 * 1024)}`;
    const first = documents(big(0));
    for (let i = 1; i < 16; i += 1) documents(big(i));
    expect(documents(big(0))).not.toBe(first);
    const refused = documents('{ nope }');
    expect(refused).toMatchObject({ errors: [{ extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } }] });
    expect(documents('{ nope }')).not.toBe(refused);
  });
});
