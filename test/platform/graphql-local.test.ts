import { ApolloServer } from '@apollo/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apolloHandler, apolloLocal, type ContextBuilder, type LocalGraphQL } from '../../platform/graphql/apollo-http.js';
import { MAX_JSON_DEPTH, startHttpService, type HttpService } from '../../platform/http/server.js';
import { loadConfig } from '../../platform/runtime/config.js';
import { createLogger } from '../../platform/runtime/logger.js';

interface Context {
  caller: string;
}

// One Apollo server, reached over HTTP and from this process: the two must answer alike.
describe('a GraphQL POST made in this process', () => {
  const apollo = new ApolloServer<Context>({
    typeDefs: 'type Query { caller: String, echo(value: String): String }',
    resolvers: {
      Query: { caller: (_p, _a, context: Context) => context.caller, echo: (_p, args: { value?: string }) => args.value ?? null },
    },
  });
  const context: ContextBuilder<Context> = async (source) => {
    // A context that breaks unexpectedly, with a detail that must stay in the log.
    if (source.headers['x-caller'] === 'breaks') throw new TypeError('context detail: token=secret-value');
    return { caller: String(source.headers['x-caller'] ?? 'nobody') };
  };
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger('info', {}, (line) => void lines.push(JSON.parse(line) as Record<string, unknown>));
  let service: HttpService;
  let local: LocalGraphQL;

  beforeAll(async () => {
    await apollo.start();
    service = await startHttpService({
      name: 'local-test',
      host: '127.0.0.1',
      port: 0,
      logger: createLogger('silent'),
      ready: async () => true,
      metrics: false,
      limits: loadConfig({ NODE_ENV: 'test' }).httpLimits,
      handle: apolloHandler(apollo, { bodyLimitBytes: 1024 * 1024, context }),
    });
    local = apolloLocal(apollo, context, logger, 'local-test');
  });
  afterAll(async () => {
    await service.close();
    await apollo.stop();
  });

  const overHttp = async (body: unknown, headers: Record<string, string>) => {
    const response = await fetch(`${service.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    return { status: response.status, text: await response.text() };
  };

  it('answers with the same status and body as the HTTP endpoint, its context built from the given headers', async () => {
    const body = { query: 'query ($v: String) { caller echo(value: $v) }', variables: { v: 'hi' } };
    const headers = { 'content-type': 'application/json', 'x-caller': 'adapter' };
    const here = await local({ headers, remoteAddress: undefined }, body, 'req-local-1');
    expect({ status: here.status, text: here.text }).toEqual(await overHttp(body, headers));
    expect(JSON.parse(here.text)).toEqual({ data: { caller: 'adapter', echo: 'hi' } });
    // One access-log line, under the caller's request id.
    expect(lines).toContainEqual(expect.objectContaining({ msg: 'request', requestId: 'req-local-1', status: 200, from: 'this process' }));
  });

  it('refuses a body nested deeper than the HTTP endpoint allows, with the same 400', async () => {
    let nested: unknown = 'deep';
    for (let i = 0; i < MAX_JSON_DEPTH + 1; i += 1) nested = { inner: nested };
    const body = { query: '{ caller }', variables: { v: nested } };
    const headers = { 'content-type': 'application/json' };
    const here = await local({ headers, remoteAddress: undefined }, body, 'req-local-2');
    expect(here.status).toBe(400);
    expect({ status: here.status, text: here.text }).toEqual(await overHttp(body, headers));
    expect(lines).toContainEqual(expect.objectContaining({ msg: 'request', requestId: 'req-local-2', status: 400 }));
  });

  it('logs a context that fails unexpectedly with the request id, since Apollo runs no plugin for it', async () => {
    const here = await local(
      { headers: { 'content-type': 'application/json', 'x-caller': 'breaks' }, remoteAddress: undefined },
      { query: '{ caller }' },
      'req-local-3',
    );
    expect(here.status).toBe(500);
    expect(lines).toContainEqual(expect.objectContaining({ msg: 'unexpected error', requestId: 'req-local-3' }));
    expect(JSON.stringify(lines.filter((line) => line.requestId === 'req-local-3'))).toContain('context detail');
  });
});
