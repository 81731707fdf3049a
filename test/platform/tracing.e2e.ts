import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { DEMO } from '../../platform/domain/demo.js';
import { startTracing, type Tracing } from '../../platform/telemetry/sdk.js';
import type { TestStack } from '../support/harness.js';

// The stack is imported once tracing is registered, as the services' entry points do: Apollo's
// gateway takes its tracer as it loads.
const harness = () => import('../support/harness.js');

/** A span as OTLP/HTTP JSON carries it (the fields this test reads). */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Array<{ key: string; value: { stringValue?: string; intValue?: string | number; arrayValue?: unknown } }>;
}

interface OtlpExport {
  resourceSpans: Array<{
    resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> };
    scopeSpans: Array<{ scope: { name: string }; spans: OtlpSpan[] }>;
  }>;
}

/** An OTLP/HTTP receiver on a free loopback port: what a collector would get. */
async function startReceiver(): Promise<{
  url: string;
  spans: Array<OtlpSpan & { scope: string; resourceService: string }>;
  close(): Promise<void>;
}> {
  const spans: Array<OtlpSpan & { scope: string; resourceService: string }> = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      expect(req.url).toBe('/v1/traces');
      expect(req.headers['content-type']).toContain('application/json');
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpExport;
      for (const resource of body.resourceSpans) {
        const resourceService = resource.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? '';
        for (const scope of resource.scopeSpans)
          for (const span of scope.spans) spans.push({ ...span, scope: scope.scope.name, resourceService });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, spans, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** A REST route that reaches the user subgraph (the session) and the payments subgraph (the account). */
const LATEST = `/accounts/${DEMO.accountId}/transactions/latest`;

const attribute = (span: OtlpSpan, key: string) => {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value?.stringValue ?? value?.intValue;
};

const newTraceparent = () => {
  const traceId = randomBytes(16).toString('hex');
  return { traceId, parent: randomBytes(8).toString('hex'), header: (id: string, parent: string) => `00-${id}-${parent}-01` };
};

/** The services whose log lines carry `traceId`. */
const servicesLogging = (stack: TestStack, traceId: string) =>
  new Set(stack.logs.filter((line) => line.traceId === traceId).map((line) => String(line.service)));

describe('tracing', () => {
  let stack: TestStack | null = null;
  let tracing: Tracing | null = null;
  afterEach(async () => {
    await stack?.stop();
    await stack?.mongo.close();
    await tracing?.shutdown();
    stack = null;
    tracing = null;
  });
  afterAll(async () => {
    await tracing?.shutdown();
  });

  it("exports one trace per REST request, continuing the caller's traceparent through the adapter, the gateway and the subgraphs, with the operation, the plan, each fetch and the database commands", async () => {
    const receiver = await startReceiver();
    try {
      tracing = await startTracing({ serviceName: 'banking-graph', otlpEndpoint: receiver.url, sampleRatio: 1 });
      const { startTestStack, until } = await harness();
      stack = await startTestStack();
      const token = await stack.loginDemo();
      const { traceId, parent, header } = newTraceparent();
      const answer = await stack.rest('GET', LATEST, { headers: { token, traceparent: header(traceId, parent) } });
      expect(answer.status).toBe(200);

      const spans = await until(
        async () => receiver.spans.filter((span) => span.traceId === traceId),
        (found) =>
          ['rest-adapter', 'gateway', 'user-subgraph', 'payments-subgraph'].every((service) =>
            found.some((span) => span.kind === 2 && attribute(span, 'service.name') === service),
          ),
        15_000,
      );
      // One trace: every span's parent is in it, but for the adapter's, whose parent is the caller's.
      const ids = new Set(spans.map((span) => span.spanId));
      const roots = spans.filter((span) => !ids.has(span.parentSpanId ?? ''));
      expect(roots.map((span) => [span.name, span.parentSpanId])).toEqual([['GET /accounts/:SvcAccountId/transactions/latest', parent]]);
      expect(spans.every((span) => span.resourceService === 'banking-graph')).toBe(true);

      const named = (prefix: string) => spans.filter((span) => span.name.startsWith(prefix));
      // The GraphQL operation at the gateway: its name, type and the hash of its document, never its variables.
      const operation = spans.find(
        (span) =>
          span.scope === 'banking-graph' &&
          attribute(span, 'graphql.operation.type') === 'query' &&
          spans.some((server) => server.spanId === span.parentSpanId && attribute(server, 'service.name') === 'gateway'),
      );
      expect(operation).toBeDefined();
      expect(String(attribute(operation!, 'graphql.document.hash'))).toMatch(/^[0-9a-f]{64}$/);
      expect(operation!.name).toBe(`query ${String(attribute(operation!, 'graphql.operation.name'))}`);
      expect(JSON.stringify(spans)).not.toContain(token);
      // Apollo's query plan and subgraph fetches, our calls between services, the database commands.
      expect(named('gateway.plan').length).toBeGreaterThan(0);
      expect(named('gateway.fetch').length).toBeGreaterThan(0);
      expect(spans.filter((span) => span.kind === 3 && String(attribute(span, 'url.full')).endsWith('/graphql')).length).toBeGreaterThan(0);
      expect(named('mongodb find').length).toBeGreaterThan(0);
    } finally {
      await receiver.close();
    }
  });

  it('puts the trace id of a traceparent in the log lines of every service it reached, over HTTP, with nothing exported', async () => {
    tracing = await startTracing({ serviceName: 'banking-graph', otlpEndpoint: undefined, sampleRatio: 1 });
    const { startTestStack } = await harness();
    stack = await startTestStack({ IN_PROCESS_CALLS: 'none' });
    const token = await stack.loginDemo();
    const { traceId, parent, header } = newTraceparent();
    const answer = await stack.rest('GET', LATEST, { headers: { token, traceparent: header(traceId, parent) } });
    expect(answer.status).toBe(200);
    expect(servicesLogging(stack, traceId)).toEqual(new Set(['rest-adapter', 'gateway', 'user-subgraph', 'payments-subgraph']));
    // A request without one starts a trace of its own, which its lines carry too.
    await stack.rest('GET', LATEST, { headers: { token } });
    const last = stack.logs.filter((line) => line.msg === 'request' && line.service === 'rest-adapter').at(-1)!;
    expect(last.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(last.traceId).not.toBe(traceId);
  });
});
