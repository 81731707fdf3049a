// `npm run bench` (about 5 minutes) or `npm run bench -- --quick` (under 2): the gateway, the REST
// adapter and the subgraphs side by side with GraphQL Hive Gateway, one scenario after another
// in the same run. Writes bench/results.json and bench/results.svg.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { DEMO } from '../platform/demo.js';
import { loadOperation } from '../rest-adapter/src/operations.js';
import { startTiers } from './tiers.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const QUICK = process.argv.includes('--quick');
/** `--profile`: the services run under `node --cpu-prof`; the profile lands in bench/profiles/. */
const PROFILE_DIR = process.argv.includes('--profile') ? path.join(HERE, 'profiles') : null;
/** `--only <text>`: only the scenarios whose name contains the text (with --profile, to profile one). */
const ONLY = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] ?? '' : null;
const DURATION_S = QUICK ? 4 : 12;
const WARMUP_S = QUICK ? 1 : 3;
const CONNECTIONS = 20;
const FIXED_RATE = 200;

/** One HTTP request of a scenario, as autocannon sends it. */
interface Target {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
}

interface Measurement {
  scenario: string;
  target: string;
  mode: 'max' | `${number}/s`;
  /** At full load, requests answered a second; at a fixed rate, requests sent a second (errors counted apart). */
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  errors: number;
}

const PROFILE = 'query Profile { me { SvcUserId firstName lastName email segment languageCode } }';
const CROSS = `query Dashboard {
  me {
    firstName lastName email
    cards { SvcCardId num status name }
    accounts { SvcAccountId balance transactions(first: 5) { edges { node { transactionId amount narrative dtsValue } } } }
    beneficiaries { SvcBeneficiaryId name accountNumber }
    restrictions { restrictionName isAllowed priority }
  }
}`;
const CARD_LIST = 'query CardAccounts { me { cards { SvcCardId num account { SvcAccountId balance currency } } } }';

const graphql = (url: string, query: string, headers: Record<string, string>, variables: Record<string, unknown> = {}): Target => ({
  url,
  method: 'POST',
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify({ query, variables }),
});

/** Sends the request once and fails the suite unless it succeeds without GraphQL errors. */
async function verify(name: string, target: Target): Promise<void> {
  const response = await fetch(target.url, { method: target.method, headers: target.headers, ...(target.body ? { body: target.body } : {}) });
  const text = await response.text();
  assert.equal(response.status, 200, `${name}: ${response.status} ${text.slice(0, 300)}`);
  assert(!text.includes('"errors"'), `${name}: ${text.slice(0, 300)}`);
}

/** A latency percentile of sorted values, to a tenth of a millisecond. */
const percentile = (sorted: number[], p: number) => Math.round((sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN) * 10) / 10;

/**
 * Sends requests at an even pace (one every 1000/rate ms, whether or not earlier ones have
 * answered) over keep-alive connections, for `seconds`; latency from each send to the end of its
 * response. autocannon's `overallRate` is not used for this: it lets each connection send its
 * quota for the second back to back at the start of the second (`reqsMadeThisSecond` in its
 * httpClient.js), so "200/s" there is a burst of 200 at full concurrency once a second.
 */
async function paced(target: Target, rate: number, seconds: number, agent: http.Agent): Promise<{ sent: number; sendingSeconds: number; latencies: number[]; errors: number }> {
  const url = new URL(target.url);
  const body = target.body ? Buffer.from(target.body) : undefined;
  const headers = { ...target.headers, ...(body ? { 'content-length': String(body.length) } : {}) };
  const send = () => new Promise<{ ok: boolean; ms: number }>((resolve) => {
    const started = performance.now();
    const request = http.request({ agent, host: url.hostname, port: url.port, path: `${url.pathname}${url.search}`, method: target.method, headers }, (response) => {
      response.resume();
      response.on('end', () => resolve({ ok: response.statusCode === 200, ms: performance.now() - started }));
    });
    request.on('error', () => resolve({ ok: false, ms: NaN }));
    // Cut off after the headers came, a request ends with neither: it counts as an error (a settled promise ignores this).
    request.on('close', () => resolve({ ok: false, ms: NaN }));
    // An answer that never comes is an error, not a suite that never ends.
    request.setTimeout(30_000, () => request.destroy(new Error('no answer within 30 s')));
    request.end(body);
  });
  const total = Math.round(rate * seconds);
  const sent: Array<Promise<{ ok: boolean; ms: number }>> = [];
  const t0 = performance.now();
  for (let i = 0; i < total; i += 1) {
    const wait = t0 + (i * 1000) / rate - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    sent.push(send());
  }
  // The span the requests were spread over (each one's interval included): its rate is the rate sent.
  const sendingSeconds = (performance.now() - t0) / 1000 + 1 / rate;
  const results = await Promise.all(sent);
  return { sent: total, sendingSeconds, latencies: results.filter((r) => r.ok).map((r) => r.ms).sort((a, b) => a - b), errors: results.filter((r) => !r.ok).length };
}

function report(measurement: Measurement): Measurement {
  console.log(`${measurement.scenario.padEnd(34)} ${measurement.target.padEnd(22)} ${measurement.mode.padEnd(6)} ${String(measurement.rps).padStart(6)} req/s  p50 ${measurement.p50} ms  p90 ${measurement.p90} ms  p99 ${measurement.p99} ms  errors ${measurement.errors}`);
  return measurement;
}

/** As many requests a second as `CONNECTIONS` connections get answered (autocannon). */
async function load(scenario: string, targetName: string, target: Target): Promise<Measurement> {
  const options = { url: target.url, method: target.method, headers: target.headers, ...(target.body ? { body: target.body } : {}), connections: CONNECTIONS };
  await autocannon({ ...options, duration: WARMUP_S });
  const result = await autocannon({ ...options, duration: DURATION_S });
  return report({
    scenario,
    target: targetName,
    mode: 'max',
    rps: Math.round(result.requests.average),
    p50: result.latency.p50,
    p90: result.latency.p90,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts + result.non2xx,
  });
}

/** Paced runs of the targets compared take turns, in segments of this many seconds. */
const SEGMENT_S = QUICK ? 1 : 2;

/**
 * The targets compared at a fixed rate (`paced`), taking turns in short segments, the order
 * rotated each round (A B C, B C A, C A B...; for two, A B, B A), for `DURATION_S` seconds each
 * in all; each target's latencies are pooled over its segments. Run one after the other instead,
 * the first ran while the machine was still settling from the full-load run before it, and a
 * difference of a few milliseconds at p50 was the order of the runs more than the targets. Each
 * segment's requests are all answered before the next segment starts, so a queue never carries
 * over from one target to the next (nor within a target from one segment to its next).
 */
async function loadPaced(scenario: string, targets: Array<[name: string, target: Target]>, rate: number): Promise<Measurement[]> {
  // Each target keeps its connections from its warm-up through its segments.
  const agents = targets.map(() => new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS }));
  for (const [i, [, target]] of targets.entries()) await paced(target, rate, WARMUP_S, agents[i]!);
  const pooled = targets.map(() => ({ latencies: [] as number[], errors: 0, seconds: 0, sent: 0 }));
  const rounds = Math.max(1, Math.round(DURATION_S / SEGMENT_S));
  for (let round = 0; round < rounds; round += 1) {
    const order = targets.map((_, i) => (i + round) % targets.length);
    for (const i of order) {
      const result = await paced(targets[i]![1], rate, SEGMENT_S, agents[i]!);
      pooled[i]!.latencies.push(...result.latencies);
      pooled[i]!.errors += result.errors;
      pooled[i]!.sent += result.sent;
      pooled[i]!.seconds += result.sendingSeconds;
    }
  }
  for (const agent of agents) agent.destroy();
  return targets.map(([name], i) => {
    const { latencies, errors, seconds, sent } = pooled[i]!;
    latencies.sort((a, b) => a - b);
    return report({ scenario, target: name, mode: `${rate}/s`, rps: Math.round(sent / seconds), p50: percentile(latencies, 50), p90: percentile(latencies, 90), p99: percentile(latencies, 99), errors });
  });
}

const json = async <T>(url: string): Promise<T> => (await fetch(url)).json() as Promise<T>;

/** A bar chart of requests per second by scenario and target. */
function chart(results: Measurement[], machine: string): string {
  const bars = results.filter((r) => r.mode === 'max');
  const width = 900;
  const rowHeight = 22;
  const left = 330;
  const max = Math.max(...bars.map((b) => b.rps), 1);
  const colour = (target: string) => (target.startsWith('Hive') ? '#e6a23c' : target.startsWith('subgraph') ? '#909399' : target.startsWith('REST') ? '#67c23a' : '#409eff');
  const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  const rows = bars.map((bar, i) => {
    const y = 40 + i * rowHeight;
    const length = Math.max(1, Math.round(((width - left - 90) * bar.rps) / max));
    return `<text x="${left - 8}" y="${y + 15}" text-anchor="end">${escape(`${bar.scenario}: ${bar.target}`)}</text>`
      + `<rect x="${left}" y="${y + 3}" width="${length}" height="${rowHeight - 6}" fill="${colour(bar.target)}"/>`
      + `<text x="${left + length + 6}" y="${y + 15}">${bar.rps} req/s, p99 ${bar.p99} ms</text>`;
  });
  const height = 60 + bars.length * rowHeight;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<text x="10" y="20" font-size="14" font-weight="bold">Requests per second (${CONNECTIONS} connections, ${DURATION_S} s each), ${escape(machine)}</text>
${rows.join('\n')}
</svg>
`;
}

const tiers = await startTiers({ profileDir: PROFILE_DIR });
const addresses = tiers.addresses;

/** Runs every scenario and writes the report. */
async function main(): Promise<void> {
  const login = await fetch(`${addresses.rest}/token`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ channel: 'internet', userName: DEMO.userName, password: DEMO.password }),
  });
  const { token } = (await login.json()) as { token: string };
  const auth = { token };
  const results: Measurement[] = [];
  const run = async (scenario: string, name: string, target: Target) => {
    if (ONLY !== null && !`${scenario} ${name}`.includes(ONLY)) return;
    await verify(`${scenario} ${name}`, target);
    results.push(await load(scenario, name, target));
  };
  const runPaced = async (scenario: string, targets: Array<[name: string, target: Target]>) => {
    const chosen = targets.filter(([name]) => ONLY === null || `${scenario} ${name}`.includes(ONLY));
    for (const [name, target] of chosen) await verify(`${scenario} ${name}`, target);
    if (chosen.length) results.push(...(await loadPaced(scenario, chosen, FIXED_RATE)));
  };
  /** The user subgraph called directly, with a principal signed as the gateway would (it lasts a minute: signed per run). */
  const direct = async (query: string): Promise<Target> => {
    const principal = await json<{ header: string; value: string }>(`${addresses.control}/principal?token=${encodeURIComponent(token)}`);
    return graphql(addresses.subgraphs.user, query, { [principal.header]: principal.value });
  };

  const s1 = '1 single-subgraph query';
  await run(s1, 'subgraph direct', await direct(PROFILE));
  await run(s1, 'our gateway', graphql(addresses.gateway, PROFILE, auth));
  await run(s1, 'Hive Gateway', graphql(addresses.hive, PROFILE, auth));
  await runPaced(s1, [['subgraph direct', await direct(PROFILE)], ['our gateway', graphql(addresses.gateway, PROFILE, auth)], ['Hive Gateway', graphql(addresses.hive, PROFILE, auth)]]);

  const s2 = '2 cross-subgraph query';
  await run(s2, 'our gateway', graphql(addresses.gateway, CROSS, auth));
  await run(s2, 'Hive Gateway', graphql(addresses.hive, CROSS, auth));

  const latest = loadOperation('transactions-latest.graphql');
  const restrictions = loadOperation('restrictions.graphql');
  const s3a = '3 latest transactions';
  await run(s3a, 'REST adapter', { url: `${addresses.rest}/accounts/${DEMO.accountId}/transactions/latest`, method: 'GET', headers: auth });
  await run(s3a, 'our gateway', graphql(addresses.gateway, latest, auth, { SvcAccountId: DEMO.accountId }));
  await run(s3a, 'Hive Gateway', graphql(addresses.hive, latest, auth, { SvcAccountId: DEMO.accountId }));
  const s3b = '3 restrictions';
  await run(s3b, 'REST adapter', { url: `${addresses.rest}/restrictions`, method: 'GET', headers: auth });
  await run(s3b, 'our gateway', graphql(addresses.gateway, restrictions, auth));
  await run(s3b, 'Hive Gateway', graphql(addresses.hive, restrictions, auth));
  // The adapter's overhead at a fixed rate, on the route whose capacity is well above it (the latest
  // transactions serve about 250/s here, so 200/s would measure queueing, not the adapter).
  await runPaced(s3b, [['REST adapter', { url: `${addresses.rest}/restrictions`, method: 'GET', headers: auth }], ['our gateway', graphql(addresses.gateway, restrictions, auth)]]);

  // Scenario 4: database commands per request, with 2 and then 100 cards each resolving its account in the payments subgraph.
  const commandsPerRequest = async (requests: number) => {
    const target = graphql(addresses.gateway, CARD_LIST, auth);
    await verify('4 list', target);
    await fetch(`${addresses.control}/commands/reset`);
    for (let i = 0; i < requests; i += 1) await verify('4 list', target);
    const counts = await json<Record<string, Record<string, number>>>(`${addresses.control}/commands`);
    // The timed sweeps (outbox relays, webhook deliveries, payment-link expiry) run whatever the requests do: not counted.
    const background = (command: string) => ['outbox.', 'deliveries.', 'paymentLinks.'].some((collection) => command.startsWith(collection));
    const perDatabase = Object.fromEntries(Object.entries(counts).map(([db, byCommand]) => [db, Object.entries(byCommand).filter(([command]) => !background(command)).reduce((a, [, n]) => a + n, 0) / requests]));
    const round = (n: number) => Math.round(n * 100) / 100;
    return { total: round(Object.values(perDatabase).reduce((a, b) => a + b, 0)), perDatabase: Object.fromEntries(Object.entries(perDatabase).map(([db, n]) => [db, round(n)])), byCommand: counts };
  };
  if (ONLY !== null) {
    console.log('--only: no report written.');
    return;
  }
  const withTwo = await commandsPerRequest(10);
  await fetch(`${addresses.control}/grow-cards?count=100`);
  const withHundred = await commandsPerRequest(10);
  await run('4 list of 100 cards + accounts', 'our gateway', graphql(addresses.gateway, CARD_LIST, auth));
  console.log(`4 database commands per request: ${withTwo.total} with 2 cards, ${withHundred.total} with 100`);

  const find = (scenario: string, target: string, mode = 'max') => results.find((r) => r.scenario === scenario && r.target === target && r.mode === mode)!;
  const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;
  const tenth = (n: number) => Math.round(n * 10) / 10;
  const fixed = `${FIXED_RATE}/s`;
  const ratios = {
    's1 gateway/direct rps': ratio(find(s1, 'our gateway').rps, find(s1, 'subgraph direct').rps),
    's1 ours/Hive rps': ratio(find(s1, 'our gateway').rps, find(s1, 'Hive Gateway').rps),
    's1 ours/Hive p99': ratio(find(s1, 'our gateway').p99, find(s1, 'Hive Gateway').p99),
    's1 gateway p50 overhead at 200/s (ms)': tenth(find(s1, 'our gateway', fixed).p50 - find(s1, 'subgraph direct', fixed).p50),
    's1 Hive p50 overhead at 200/s (ms)': tenth(find(s1, 'Hive Gateway', fixed).p50 - find(s1, 'subgraph direct', fixed).p50),
    's2 ours/Hive rps': ratio(find(s2, 'our gateway').rps, find(s2, 'Hive Gateway').rps),
    's2 ours/Hive p99': ratio(find(s2, 'our gateway').p99, find(s2, 'Hive Gateway').p99),
    's3 latest REST/GraphQL rps': ratio(find(s3a, 'REST adapter').rps, find(s3a, 'our gateway').rps),
    's3 latest ours/Hive rps': ratio(find(s3a, 'our gateway').rps, find(s3a, 'Hive Gateway').rps),
    's3 latest ours/Hive p99': ratio(find(s3a, 'our gateway').p99, find(s3a, 'Hive Gateway').p99),
    's3 restrictions REST/GraphQL rps': ratio(find(s3b, 'REST adapter').rps, find(s3b, 'our gateway').rps),
    's3 restrictions REST p50 overhead at 200/s (ms)': tenth(find(s3b, 'REST adapter', fixed).p50 - find(s3b, 'our gateway', fixed).p50),
    's3 restrictions ours/Hive rps': ratio(find(s3b, 'our gateway').rps, find(s3b, 'Hive Gateway').rps),
    's3 restrictions ours/Hive p99': ratio(find(s3b, 'our gateway').p99, find(s3b, 'Hive Gateway').p99),
  };
  const machine = `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
  const errors = results.reduce((n, r) => n + r.errors, 0);
  const report = {
    date: new Date().toISOString(),
    mode: QUICK ? 'quick' : 'full',
    machine,
    database: process.env.MONGODB_URI ? 'MONGODB_URI' : 'embedded FerretDB',
    settings: { connections: CONNECTIONS, durationSeconds: DURATION_S, warmupSeconds: WARMUP_S, fixedRate: FIXED_RATE, fixedRateLoad: 'evenly paced, open loop (bench/suite.ts paced()); the targets compared take turns in segments (loadPaced())', segmentSeconds: SEGMENT_S },
    results,
    ratios,
    databaseCommandsPerRequest: { cards2: withTwo, cards100: withHundred },
    errors,
  };
  console.log(JSON.stringify(ratios, null, 2));
  const suffix = QUICK ? '.quick' : '';
  writeFileSync(path.join(HERE, `results${suffix}.json`), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(path.join(HERE, `results${suffix}.svg`), chart(results, machine));
  if (errors > 0) process.exitCode = 1;
}

try {
  await main();
} finally {
  // The services stop cleanly (and write their CPU profiles under --profile) before the suite exits.
  await tiers.stop();
}
