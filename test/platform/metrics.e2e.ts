import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createClient } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { DEMO } from '../../platform/domain/demo.js';
import { ensureDebianPackage } from '../support/debian.js';
import { startTestStack, until, type TestStack } from '../support/harness.js';
import { freePort } from '../../platform/mongo/ferretdb.js';

// A real Prometheus (Debian's package) scrapes every service of a running stack, and is asked for
// one series of each kind the services export.
const PROMETHEUS = '/usr/bin/prometheus';

/** A Prometheus query's result vector. */
interface Vector {
  status: string;
  data: { resultType: string; result: Array<{ metric: Record<string, string>; value: [number, string] }> };
}

describe('metrics scraped by Prometheus', () => {
  let stack: TestStack;
  let prometheus: ChildProcess | null = null;
  let prometheusUrl = '';
  let dataDir = '';
  const prometheusLog: string[] = [];

  beforeAll(async () => {
    await ensureDebianPackage(PROMETHEUS, 'prometheus');
    // A low limit on the sensitive fields, for a refusal to count.
    stack = await startTestStack({ RATE_LIMIT_SENSITIVE: '3' });
    dataDir = await mkdtemp(path.join(tmpdir(), 'prometheus-'));
    const services = {
      'rest-adapter': stack.restAdapter,
      gateway: stack.gateway,
      ...Object.fromEntries(Object.entries(stack.subgraphs).map(([name, service]) => [`${name}-subgraph`, service])),
    };
    const scrapeConfigs = Object.entries(services)
      .map(
        ([name, service]) =>
          `  - job_name: '${name}'\n    scrape_interval: 1s\n    static_configs:\n      - targets: ['127.0.0.1:${service.port}']`,
      )
      .join('\n');
    await writeFile(
      path.join(dataDir, 'prometheus.yml'),
      `global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n${scrapeConfigs}\n`,
    );
    const port = await freePort();
    prometheusUrl = `http://127.0.0.1:${port}`;
    prometheus = spawn(
      PROMETHEUS,
      [
        `--config.file=${path.join(dataDir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${path.join(dataDir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--log.level=warn',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    prometheus.stdout?.on('data', (chunk: Buffer) => prometheusLog.push(chunk.toString()));
    prometheus.stderr?.on('data', (chunk: Buffer) => prometheusLog.push(chunk.toString()));
    await until(
      () =>
        fetch(`${prometheusUrl}/-/ready`).then(
          (r) => r.ok,
          () => false,
        ),
      (ready) => ready,
      30_000,
    ).catch((error: unknown) => {
      throw new Error(`Prometheus did not start: ${String(error)}\n${prometheusLog.join('')}`);
    });
  });

  afterAll(async () => {
    prometheus?.kill('SIGKILL');
    await stack.stop();
    await stack.mongo.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  const query = async (promql: string): Promise<Vector['data']['result']> => {
    const response = await fetch(`${prometheusUrl}/api/v1/query?query=${encodeURIComponent(promql)}`);
    const body = (await response.json()) as Vector;
    expect(body.status, promql).toBe('success');
    return body.data.result;
  };

  it('answers GET /metrics on every service in the text format', async () => {
    for (const service of [stack.restAdapter, stack.gateway, ...Object.values(stack.subgraphs)]) {
      const response = await fetch(`${service.url}/metrics`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toContain('text/plain');
      const text = await response.text();
      expect(text).toContain('# TYPE http_server_request_duration_seconds histogram');
      expect(text).toContain('process_cpu_seconds_total');
    }
  });

  it('has one series of each kind in Prometheus after real traffic', async () => {
    const token = await stack.loginDemo();
    // A subscription held open, a REST read through the whole graph, a GraphQL error, a refused login.
    const client = createClient({
      url: `${stack.gateway.url.replace('http', 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { token },
      retryAttempts: 0,
    });
    const events: unknown[] = [];
    const unsubscribe = client.subscribe(
      { query: `subscription { cardStatusChanged { SvcCardId } }` },
      { next: (event) => events.push(event), error: () => {}, complete: () => {} },
    );
    try {
      await until(
        async () => stack.gateway.subscribers(),
        (count) => count >= 1,
      );
      expect((await stack.rest('GET', `/accounts/${DEMO.accountId}/transactions/latest`, { headers: { token } })).status).toBe(200);
      const logins = await Promise.all(
        Array.from({ length: 5 }, () =>
          stack.rest('PUT', '/token', { body: { channel: 'internet', userName: 'nobody.here', password: 'not the password' } }),
        ),
      );
      expect(logins.some((login) => login.status === 429)).toBe(true);
      // An event on the bus, for its lag to be observed at the gateway.
      expect((await stack.rest('POST', `/cards/${DEMO.cardIds[0]}/off`, { headers: { token } })).status).toBe(200);
      await until(
        async () => events.length,
        (count) => count >= 1,
      );

      const expectations: Array<[string, string]> = [
        ['every service scraped', 'count(up == 1) == 6'],
        [
          'REST request latency by route and status',
          `http_server_request_duration_seconds_count{service="rest-adapter",route="/accounts/:SvcAccountId/transactions/latest",status="200"}`,
        ],
        ['errors by status', `http_server_request_duration_seconds_count{service="rest-adapter",status="429"}`],
        [
          'GraphQL operations by name',
          `graphql_operation_duration_seconds_count{service="gateway",operation="LatestTransactions",type="query",outcome="ok"}`,
        ],
        ['subgraph fetch latency', `gateway_subgraph_fetch_duration_seconds_count{subgraph="payments",outcome="ok"}`],
        ['subgraph readiness', 'gateway_subgraph_ready{subgraph="cards"} == 1'],
        ['database command latency', 'mongodb_command_duration_seconds_count{command="find",outcome="ok"}'],
        ['session lookups', 'gateway_session_lookups_total'],
        ['rate-limit refusals', 'gateway_rate_limit_refusals_total{limit="sensitive"} > 0'],
        ['deduplicated fetches', 'gateway_subgraph_fetches_deduplicated_total{subgraph="user"}'],
        ['subscriptions', 'gateway_subscriptions >= 1'],
        ['event bus lag', 'event_bus_lag_seconds_count > 0'],
        ['delivery outcomes', 'delivery_attempts_total{kind="webhook",outcome="delivered"}'],
        ['queue depth', 'queue_depth{queue="outbox: event bus"}'],
        ["Node's default metrics", 'nodejs_eventloop_lag_p99_seconds'],
      ];
      for (const [kind, promql] of expectations) {
        const result = await until(
          () => query(promql),
          (series) => series.length > 0,
          15_000,
        ).catch(() => [] as Vector['data']['result']);
        expect(result.length, `${kind}: ${promql}`).toBeGreaterThan(0);
      }
    } finally {
      unsubscribe();
      await client.dispose();
    }
  });
});
