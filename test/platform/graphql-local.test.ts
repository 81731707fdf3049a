import { ApolloServer } from '@apollo/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apolloRunner, graphqlHandler, graphqlLocal, type ContextBuilder } from '../../platform/graphql/apollo-http.js';
import type { LocalPost } from '../../platform/http/transport.js';
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
  let local: LocalPost;
  const endpoint = { bodyLimitBytes: 4096, context };

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
      handle: graphqlHandler(apolloRunner(apollo), endpoint),
    });
    local = graphqlLocal(apolloRunner(apollo), endpoint, logger, 'local-test');
  });
  afterAll(async () => {
    await service.close();
    await apollo.stop();
  });

  const overHttp = async (text: string, headers: Record<string, string>) => {
    const response = await fetch(`${service.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: text,
    });
    return { status: response.status, text: await response.text() };
  };
  /** The same request in this process, under the request id `requestId`. */
  const here = async (text: string, headers: Record<string, string>, requestId: string) => {
    const answer = await local({ 'content-type': 'application/json', ...headers, 'x-request-id': requestId }, text);
    return { status: answer.status, text: answer.text };
  };

  it('answers with the same status and body as the HTTP endpoint, its context built from the given headers', async () => {
    const text = JSON.stringify({ query: 'query ($v: String) { caller echo(value: $v) }', variables: { v: 'hi' } });
    const headers = { 'x-caller': 'adapter' };
    const answer = await here(text, headers, 'req-local-1');
    expect(answer).toEqual(await overHttp(text, headers));
    expect(JSON.parse(answer.text)).toEqual({ data: { caller: 'adapter', echo: 'hi' } });
    // One access-log line, under the caller's request id.
    expect(lines).toContainEqual(expect.objectContaining({ msg: 'request', requestId: 'req-local-1', status: 200, from: 'this process' }));
  });

  it('refuses a body nested deeper than the HTTP endpoint allows, with the same 400', async () => {
    let nested: unknown = 'deep';
    for (let i = 0; i < MAX_JSON_DEPTH + 1; i += 1) nested = { inner: nested };
    const text = JSON.stringify({ query: '{ caller }', variables: { v: nested } });
    const answer = await here(text, {}, 'req-local-2');
    expect(answer.status).toBe(400);
    expect(answer).toEqual(await overHttp(text, {}));
    expect(lines).toContainEqual(expect.objectContaining({ msg: 'request', requestId: 'req-local-2', status: 400 }));
  });

  it('refuses a body over the limit, one that is not JSON, and an empty one, as the HTTP endpoint does', async () => {
    const tooLarge = JSON.stringify({ query: '{ caller }', variables: { v: 'x'.repeat(5000) } });
    const cases: Array<[string, number]> = [
      [tooLarge, 413],
      ['{ not json', 400],
      ['', 400],
    ];
    for (const [text, status] of cases) {
      const answer = await here(text, {}, 'req-local-4');
      expect(answer.status).toBe(status);
      expect(answer).toEqual(await overHttp(text, {}));
    }
  });

  it('logs a context that fails unexpectedly with the request id, since Apollo runs no plugin for it', async () => {
    const answer = await here(JSON.stringify({ query: '{ caller }' }), { 'x-caller': 'breaks' }, 'req-local-3');
    expect(answer.status).toBe(500);
    expect(lines).toContainEqual(expect.objectContaining({ msg: 'unexpected error', requestId: 'req-local-3' }));
    expect(JSON.stringify(lines.filter((line) => line.requestId === 'req-local-3'))).toContain('context detail');
  });
});
