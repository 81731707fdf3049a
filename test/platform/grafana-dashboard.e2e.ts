import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { REPO_ROOT } from '../../platform/runtime/config.js';
import {
  bodyRefusals,
  connectionRefusals,
  databaseCommands,
  deduplicatedFetches,
  deliveryAttempts,
  documentRefusals,
  eventBusLag,
  graphqlOperations,
  httpRequests,
  metricsExposition,
  rateLimitRefusals,
  reportQueueDepth,
  reportSubgraphReadiness,
  reportSubscriptions,
  replayedEvents,
  subscriptionCatchUp,
  subscriptionResumes,
  sessionLookups,
  subgraphFetches,
  subscriptionRefusals,
} from '../../platform/telemetry/metrics.js';
import { ensureDebianPackage } from '../support/debian.js';
import { freePort } from '../../platform/mongo/ferretdb.js';

/**
 * The dashboard's PromQL through Prometheus itself (Debian's `prometheus` package): promtool parses
 * and type-checks every query, and a Prometheus scraping this process's /metrics answers each one
 * with series that carry the labels its legend shows. grafana-dashboard.test.ts checks the names
 * and labels against the registry without them.
 */

const PROMTOOL = '/usr/bin/promtool';
const PROMETHEUS = '/usr/bin/prometheus';
const DASHBOARD_PATH = path.join(REPO_ROOT, 'deploy/grafana/banking-graph.json');
/** What Grafana puts for $__rate_interval at a 1 s scrape interval (four scrapes), with a margin. */
const RATE_INTERVAL = '5s';

interface Query {
  where: string;
  expr: string;
  legendLabels: string[];
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const listOf = (value: unknown): unknown[] => (Array.isArray(value) ? (value as unknown[]) : []);
const textOf = (value: unknown): string => (typeof value === 'string' ? value : '');

/** Every panel query of the dashboard, and each query variable's `label_values(selector, label)` as its selector. */
function dashboardQueries(): Query[] {
  const dashboard: unknown = JSON.parse(readFileSync(DASHBOARD_PATH, 'utf8'));
  if (!isRecord(dashboard)) throw new Error(`${DASHBOARD_PATH} is not a JSON object`);
  const panels = listOf(dashboard.panels).flatMap((panel) => [panel, ...(isRecord(panel) ? listOf(panel.panels) : [])]);
  const queries = panels.filter(isRecord).flatMap((panel) =>
    listOf(panel.targets)
      .filter(isRecord)
      .map((target) => ({
        where: `"${textOf(panel.title)}" ${textOf(target.refId)}`,
        expr: textOf(target.expr),
        legendLabels: [...textOf(target.legendFormat).matchAll(/\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}/g)].map((match) => match[1]!),
      })),
  );
  const templating = isRecord(dashboard.templating) ? dashboard.templating : {};
  for (const variable of listOf(templating.list).filter(isRecord)) {
    const match = /^\s*label_values\(\s*(.+)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*$/s.exec(textOf(variable.query));
    if (match) queries.push({ where: `$${textOf(variable.name)}`, expr: match[1]!, legendLabels: [match[2]!] });
  }
  return queries;
}

/** A query as Prometheus gets it from Grafana: $__rate_interval a duration, every other variable a regex matching any value. */
const asPrometheusGetsIt = (expr: string): string =>
  expr.replace(/\$\{?__rate_interval\}?/g, RATE_INTERVAL).replace(/\$\{([a-zA-Z0-9_]+)(?::[^}]*)?\}|\$([a-zA-Z0-9_]+)/g, '.+');

const queries = dashboardQueries();

describe("the dashboard's PromQL, read by Prometheus", () => {
  let dir = '';
  beforeAll(async () => {
    await ensureDebianPackage(PROMTOOL, 'prometheus');
    await ensureDebianPackage(PROMETHEUS, 'prometheus');
    dir = await mkdtemp(path.join(tmpdir(), 'grafana-dashboard-'));
  }, 11 * 60_000);
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** `promtool check rules` over the expressions as recording rules: its exit status and what it said. */
  async function checkRules(exprs: { record: string; expr: string }[]): Promise<{ status: number | null; output: string }> {
    const file = path.join(dir, `rules-${exprs.length}.yml`);
    await writeFile(file, stringify({ groups: [{ name: 'banking-graph-dashboard', rules: exprs }] }));
    const run = spawnSync(PROMTOOL, ['check', 'rules', file], { encoding: 'utf8' });
    return { status: run.status, output: `${run.stdout}${run.stderr}` };
  }

  it('promtool parses and type-checks every query (and refuses a broken one)', async () => {
    expect(queries.length).toBeGreaterThan(20);
    const rules = queries.map(({ expr }, i) => ({ record: `dashboard:query_${i}`, expr: asPrometheusGetsIt(expr) }));
    const checked = await checkRules(rules);
    // promtool names a failing rule by its record name: dashboard:query_<index in `queries`>.
    expect(checked.output, queries.map(({ where }, i) => `${i}: ${where}`).join('\n')).toContain(`SUCCESS: ${rules.length} rules found`);
    expect(checked.status).toBe(0);

    const broken = await checkRules([
      { record: 'dashboard:broken', expr: 'histogram_quantile(0.95, sum by (le (rate(http_server_request_duration_seconds_bucket[5m])))' },
    ]);
    expect(broken.status).not.toBe(0);
    expect(broken.output).toMatch(/parse error/);
  });

  describe('against a Prometheus that scrapes this process', () => {
    let metricsServer: Server | undefined;
    let prometheus: ChildProcess | undefined;
    let prometheusUrl = '';
    let stderr = '';
    const unreport: (() => void)[] = [];

    beforeAll(async () => {
      // A series for every query to find, with the label values the services use.
      for (const status of ['200', '500']) httpRequests.observe({ service: 'payments', method: 'POST', route: '/graphql', status }, 0.02);
      for (const outcome of ['ok', 'error']) {
        graphqlOperations.observe({ service: 'payments', operation: 'SendPayment', type: 'mutation', outcome }, 0.03);
        subgraphFetches.observe({ subgraph: 'payments', outcome }, 0.01);
        databaseCommands.observe({ database: 'banking_payments', command: 'find', outcome }, 0.002);
      }
      deduplicatedFetches.inc({ subgraph: 'payments' });
      for (const source of ['memory', 'read']) sessionLookups.inc({ source });
      rateLimitRefusals.inc({ limit: 'per-address' });
      bodyRefusals.inc({ service: 'gateway' });
      documentRefusals.inc({ limit: 'tokens', via: 'http' });
      connectionRefusals.inc({ service: 'rest-adapter', reason: 'slow_body' });
      subscriptionRefusals.inc({ limit: 'connections-per-principal' });
      eventBusLag.observe(0.04);
      subscriptionResumes.inc({ outcome: 'caught_up' });
      replayedEvents.inc(3);
      subscriptionCatchUp.observe(0.2);
      deliveryAttempts.inc({ kind: 'webhook', outcome: 'delivered' });
      unreport.push(
        reportSubgraphReadiness('payments', async () => 1),
        reportSubscriptions('gateway', 'graphql-ws', async () => 2),
        reportQueueDepth('banking_payments', 'deliveries', async () => 3),
      );
      // Garbage enough for a collection, so that nodejs_gc_duration_seconds has series.
      let kept = 0;
      for (let i = 0; i < 200_000; i++) kept += [i, String(i)].length;
      expect(kept).toBeGreaterThan(0);

      metricsServer = createHttpServer((req, res) => {
        void metricsExposition().then(({ contentType, text }) => res.writeHead(200, { 'content-type': contentType }).end(text));
      });
      await new Promise<void>((resolve) => metricsServer!.listen(0, '127.0.0.1', resolve));
      const metricsPort = (metricsServer.address() as AddressInfo).port;

      const config = path.join(dir, 'prometheus.yml');
      await writeFile(
        config,
        stringify({
          global: { scrape_interval: '1s', evaluation_interval: '1s' },
          scrape_configs: [{ job_name: 'banking-graph', static_configs: [{ targets: [`127.0.0.1:${metricsPort}`] }] }],
        }),
      );
      const port = await freePort();
      prometheusUrl = `http://127.0.0.1:${port}`;
      const child = spawn(
        PROMETHEUS,
        [
          `--config.file=${config}`,
          `--storage.tsdb.path=${path.join(dir, 'data')}`,
          `--web.listen-address=127.0.0.1:${port}`,
          '--log.level=warn',
        ],
        { stdio: ['ignore', 'ignore', 'pipe'] },
      );
      prometheus = child;
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      process.once('exit', () => child.kill('SIGKILL'));
      const until = Date.now() + 30_000;
      for (;;) {
        const ready = await fetch(`${prometheusUrl}/-/ready`).then(
          (response) => response.ok,
          () => false,
        );
        if (ready) break;
        if (Date.now() > until || child.exitCode !== null) throw new Error(`Prometheus did not start: ${stderr}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }, 60_000);

    afterAll(async () => {
      for (const stop of unreport) stop();
      prometheus?.kill('SIGKILL');
      if (metricsServer) await new Promise((resolve) => metricsServer!.close(resolve));
    });

    /** The series an instant query answers now, as their label sets; an error names what Prometheus said. */
    async function seriesOf(expr: string): Promise<Record<string, string>[]> {
      const response = await fetch(`${prometheusUrl}/api/v1/query?${new URLSearchParams({ query: expr }).toString()}`);
      const body: unknown = await response.json();
      if (!isRecord(body) || body.status !== 'success' || !isRecord(body.data)) throw new Error(`${expr}: ${JSON.stringify(body)}`);
      return listOf(body.data.result).map((entry) => {
        const metric = isRecord(entry) && isRecord(entry.metric) ? entry.metric : {};
        return Object.fromEntries(Object.entries(metric).map(([label, value]) => [label, textOf(value)]));
      });
    }

    it('answers every query with series that carry the labels its legend shows', async () => {
      // Until every query has its series (a rate needs two scrapes within its window), at most 30 s.
      const until = Date.now() + 30_000;
      let problems: string[] = [];
      for (;;) {
        problems = [];
        for (const { where, expr, legendLabels } of queries) {
          const series = await seriesOf(asPrometheusGetsIt(expr)).catch((error: unknown) => {
            problems.push(`${where}: ${(error as Error).message}`);
            return null;
          });
          if (series === null) continue;
          if (series.length === 0) problems.push(`${where}: no series`);
          for (const labels of series) {
            const missing = legendLabels.filter((label) => !labels[label]);
            if (missing.length > 0) problems.push(`${where}: a series without ${missing.join(', ')}: ${JSON.stringify(labels)}`);
          }
        }
        if (problems.length === 0 || Date.now() > until) break;
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
      expect(problems, stderr).toEqual([]);
    }, 60_000);
  });
});
