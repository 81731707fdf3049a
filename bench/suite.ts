// `npm run bench` (about 7 minutes) or `npm run bench -- --quick` (under 2; without the best case and the memory reading): our gateway and REST
// adapter side by side with GraphQL Hive Gateway (its default runtime and its Router Runtime), over
// the same subgraphs, one scenario after another in the same run. The headline workload is many
// users: every request is sent as a random one of 1,000 seeded users, with that user's session and
// ids. One session for every request is the old workload, kept and labelled as the best case.
// Writes bench/results.json and bench/results.svg (with --quick, results.quick.*; with --reverse, results.reverse.*).
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { seededRandom } from '../platform/domain/ach-history.js';
import { DEMO } from '../platform/domain/demo.js';
import { PRINCIPAL_HEADER, signPrincipal } from '../platform/security/signed-headers.js';
import { loadOperation } from '../rest-adapter/src/operations.js';
import type { BenchUser } from './population.js';
import { startTiers, type Tiers } from './tiers.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const QUICK = process.argv.includes('--quick');
/** `--profile`: the services run under `node --cpu-prof`; the profiles land in bench/profiles/. */
const PROFILE_DIR = process.argv.includes('--profile') ? path.join(HERE, 'profiles') : null;
/** `--only <text>`: only the scenarios whose name contains the text (with --profile, to profile one). */
const ONLY = process.argv.includes('--only') ? (process.argv[process.argv.indexOf('--only') + 1] ?? '') : null;
/**
 * `--baseline <checkout>` (with --only): the gateway of another checkout of this project, built
 * there with `npm run build`, runs beside ours over the same subgraphs and takes its turns with
 * the others, so that two builds are compared in one run on a noisy machine.
 */
const BASELINE = process.argv.includes('--baseline') ? (process.argv[process.argv.indexOf('--baseline') + 1] ?? '') : undefined;
if (
  BASELINE !== undefined &&
  (BASELINE === '' || BASELINE.startsWith('--') || !existsSync(path.join(BASELINE, 'dist', 'bench', 'services.js')))
)
  throw new Error(
    `--baseline takes a checkout of this project built with \`npm run build\` (its dist/bench/services.js); got ${JSON.stringify(BASELINE)}.`,
  );
if (BASELINE !== undefined && ONLY === null)
  throw new Error('--baseline compares builds in the scenarios of --only; a full run reports ours alone.');
/**
 * Full-load runs: each target's time split into this many turns, in the same order each round;
 * `--rounds <n>` (default 2) for comparisons on a noisy machine, each round adding a turn of 5 s.
 */
const ROUNDS = process.argv.includes('--rounds') ? Math.max(1, Number(process.argv[process.argv.indexOf('--rounds') + 1]) || 2) : 2;
/**
 * `--reverse`: full-load turns in the opposite order (ours last), for the place a target takes in
 * the order: a run each way, their geometric mean cancels it.
 */
const REVERSE = process.argv.includes('--reverse');
const DURATION_S = (QUICK ? 1 : 5) * ROUNDS;
const WARMUP_S = QUICK ? 1 : 2;
const CONNECTIONS = 20;
const FIXED_RATE = 200;
/** The REST adapter's overhead is paced lower: the restrictions route serves under 200/s with many users, and at its capacity a queue, not the adapter, sets the latency. */
const ADAPTER_RATE = 100;
/** Sessions the gateway has seen when its memory is read (full runs only). */
const LIVE_SESSIONS = 10_000;

/** One HTTP request, as autocannon sends it. */
interface Request {
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body?: string;
}

/** Where a scenario's requests go, and how each is drawn (a random user's, or always the same one). */
interface Target {
  origin: string;
  draw: () => Request;
  /** The counters that say what the target's requests cost the subgraphs. */
  counters: 'ours' | 'peer' | 'direct';
  /** The process of the gateway the requests go through (none for a subgraph called directly). */
  pid: number | null;
}

/** What one target's requests cost behind the gateway, per request answered. */
interface Costs {
  /** Database commands (the subgraphs', session reads included; not the timed sweeps'). */
  databaseCommands: number;
  /** Requests that reached a subgraph (the gateway's session reads included). */
  subgraphCalls: number;
  /** Subgraph fetches our gateway answered from an identical one in flight instead of sending (deduplication). */
  sharedFetches: number | null;
  /** Session tokens our gateway answered from its memory of live sessions, and by a read of the session (ours only). */
  sessions: { fromMemory: number; read: number } | null;
  /**
   * CPU ms per request: the gateway's process (none when a subgraph is called directly), the
   * subgraphs' process, the embedded database; and the gateway's per subgraph call it made.
   */
  cpuMs: { gateway: number | null; gatewayPerSubgraphCall: number | null; subgraphs: number; database: number | null };
}

interface Measurement {
  scenario: string;
  workload: 'many users' | 'best case: one session';
  target: string;
  mode: 'max' | `${number}/s`;
  /** At full load, requests answered a second; at a fixed rate, requests sent a second (errors counted apart). */
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  errors: number;
  costs?: Costs;
  /** In the mix, each operation's own. */
  operations?: Record<string, { share: number; p50: number; p99: number; errors: number }>;
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
const LATEST = loadOperation('transactions-latest.graphql');
const RESTRICTIONS = loadOperation('restrictions.graphql');
const CARDS = 'query Cards { me { cards { SvcCardId num status name isActive typeId } } }';
const CARD_ONOFF = loadOperation('card-onoff.graphql');
const BENEFICIARY_CHANGE = loadOperation('beneficiary-modify.graphql');

/**
 * The draws of users, ids and operations. Every target's turn of a round starts the same seeded
 * sequence, so targets compared meet the same users in the same order: with accounts of 3 to 400
 * transactions, a turn that happened on more of the heavy ones would otherwise weigh as much as
 * the gateway.
 */
let random: () => number = seededRandom(1);
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;

const graphqlRequest = (url: string, query: string, headers: Record<string, string>, variables: Record<string, unknown> = {}): Request => ({
  method: 'POST',
  path: new URL(url).pathname,
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify({ query, variables }),
});

/** Sends the request once and fails the suite unless it succeeds without GraphQL errors. */
async function verify(name: string, target: Target): Promise<void> {
  const request = target.draw();
  const response = await fetch(`${target.origin}${request.path}`, {
    method: request.method,
    headers: request.headers,
    ...(request.body ? { body: request.body } : {}),
  });
  const text = await response.text();
  assert.equal(response.status, 200, `${name}: ${response.status} ${text.slice(0, 300)}`);
  assert(!text.includes('"errors"'), `${name}: ${text.slice(0, 300)}`);
}

/** A latency percentile of sorted values, to a tenth of a millisecond. */
const percentile = (sorted: number[], p: number) =>
  Math.round((sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN) * 10) / 10;

/** Sends one request over `agent`; latency from the send to the end of the response. */
function send(origin: string, request: Request, agent: http.Agent): Promise<{ ok: boolean; ms: number }> {
  const url = new URL(origin);
  const body = request.body ? Buffer.from(request.body) : undefined;
  const headers = { ...request.headers, ...(body ? { 'content-length': String(body.length) } : {}) };
  return new Promise((resolve) => {
    const started = performance.now();
    const outgoing = http.request(
      { agent, host: url.hostname, port: url.port, path: request.path, method: request.method, headers },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          text += chunk;
        });
        response.on('end', () =>
          resolve({ ok: response.statusCode === 200 && !text.includes('"errors"'), ms: performance.now() - started }),
        );
      },
    );
    outgoing.on('error', () => resolve({ ok: false, ms: NaN }));
    // Cut off after the headers came, a request ends with neither: it counts as an error (a settled promise ignores this).
    outgoing.on('close', () => resolve({ ok: false, ms: NaN }));
    // An answer that never comes is an error, not a suite that never ends.
    outgoing.setTimeout(30_000, () => outgoing.destroy(new Error('no answer within 30 s')));
    outgoing.end(body);
  });
}

/**
 * Sends requests at an even pace (one every 1000/rate ms, whether or not earlier ones have
 * answered) over keep-alive connections, for `seconds`. autocannon's `overallRate` is not used for
 * this: it lets each connection send its quota for the second back to back at the start of the
 * second (`reqsMadeThisSecond` in its httpClient.js), so "200/s" there is a burst once a second.
 */
async function paced(
  target: Target,
  rate: number,
  seconds: number,
  agent: http.Agent,
): Promise<{ sent: number; sendingSeconds: number; latencies: number[]; errors: number }> {
  const total = Math.round(rate * seconds);
  const sent: Array<Promise<{ ok: boolean; ms: number }>> = [];
  const t0 = performance.now();
  for (let i = 0; i < total; i += 1) {
    const wait = t0 + (i * 1000) / rate - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    sent.push(send(target.origin, target.draw(), agent));
  }
  // The span the requests were spread over (each one's interval included): its rate is the rate sent.
  const sendingSeconds = (performance.now() - t0) / 1000 + 1 / rate;
  const results = await Promise.all(sent);
  return {
    sent: total,
    sendingSeconds,
    latencies: results
      .filter((r) => r.ok)
      .map((r) => r.ms)
      .sort((a, b) => a - b),
    errors: results.filter((r) => !r.ok).length,
  };
}

function report(measurement: Measurement): Measurement {
  const cpu = measurement.costs?.cpuMs;
  const costs = measurement.costs
    ? `  db ${measurement.costs.databaseCommands}/req  subgraph calls ${measurement.costs.subgraphCalls}/req${measurement.costs.sharedFetches === null ? '' : `  deduplicated ${measurement.costs.sharedFetches}/req`}${measurement.costs.sessions === null ? '' : `  sessions from memory ${measurement.costs.sessions.fromMemory}/req read ${measurement.costs.sessions.read}/req`}  cpu ms/req gateway ${cpu!.gateway ?? '-'} (per subgraph call ${cpu!.gatewayPerSubgraphCall ?? '-'}) subgraphs ${cpu!.subgraphs} db ${cpu!.database ?? '-'}`
    : '';
  const label = `${measurement.workload === 'many users' ? '' : '[best case] '}${measurement.scenario}`;
  console.log(
    `${label.padEnd(40)} ${measurement.target.padEnd(22)} ${measurement.mode.padEnd(6)} ${String(measurement.rps).padStart(6)} req/s  p50 ${measurement.p50} ms  p99 ${measurement.p99} ms  errors ${measurement.errors}${costs}`,
  );
  for (const [name, operation] of Object.entries(measurement.operations ?? {})) {
    console.log(
      `${''.padEnd(40)}   ${name.padEnd(20)} ${String(operation.share).padStart(5)}%  p50 ${operation.p50} ms  p99 ${operation.p99} ms  errors ${operation.errors}`,
    );
  }
  return measurement;
}

const json = async <T>(url: string): Promise<T> => (await fetch(url)).json() as Promise<T>;
const round = (n: number, places = 2) => Math.round(n * 10 ** places) / 10 ** places;

/** The counters behind the costs, read from the tiers' control endpoints. */
interface Counters {
  commands: number;
  subgraphRequests: number;
  fetches: { sent: number; shared: number; sessions: { fromMemory: number; read: number } };
  /** CPU time so far in ms: the subgraphs' process, the embedded database (null on MONGODB_URI), each gateway's process by pid. */
  cpu: { subgraphs: number; database: number | null; gateways: Map<number, number> };
}

/** No counts: what a target has spent before its first turn. */
const noCounters = (): Counters => ({
  commands: 0,
  subgraphRequests: 0,
  fetches: { sent: 0, shared: 0, sessions: { fromMemory: 0, read: 0 } },
  cpu: { subgraphs: 0, database: 0, gateways: new Map() },
});

/** `spent`, plus what was spent between the readings `before` and `after`. */
function addCounters(spent: Counters, before: Counters, after: Counters): Counters {
  const gateways = new Map(spent.cpu.gateways);
  for (const [pid, ms] of after.cpu.gateways) gateways.set(pid, (gateways.get(pid) ?? 0) + ms - (before.cpu.gateways.get(pid) ?? 0));
  const { database } = spent.cpu;
  return {
    commands: spent.commands + after.commands - before.commands,
    subgraphRequests: spent.subgraphRequests + after.subgraphRequests - before.subgraphRequests,
    fetches: {
      sent: spent.fetches.sent + after.fetches.sent - before.fetches.sent,
      shared: spent.fetches.shared + after.fetches.shared - before.fetches.shared,
      sessions: {
        fromMemory: spent.fetches.sessions.fromMemory + after.fetches.sessions.fromMemory - before.fetches.sessions.fromMemory,
        read: spent.fetches.sessions.read + after.fetches.sessions.read - before.fetches.sessions.read,
      },
    },
    cpu: {
      subgraphs: spent.cpu.subgraphs + after.cpu.subgraphs - before.cpu.subgraphs,
      database:
        database === null || after.cpu.database === null || before.cpu.database === null
          ? null
          : database + after.cpu.database - before.cpu.database,
      gateways,
    },
  };
}

/** A process's CPU time so far in ms, from Linux's /proc/<pid>/stat (user and system ticks of 10 ms). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** The timed sweeps (outbox sweeps, webhook deliveries, payment-link expiry) run whatever the requests do: not counted. */
const BACKGROUND = ['outbox.', 'deliveries.', 'paymentLinks.'];

/** Runs every scenario and writes the report. */
async function main(tiers: Tiers): Promise<void> {
  const { addresses } = tiers;
  const users = await json<BenchUser[]>(`${addresses.control}/population`);
  const gateways: Array<[name: string, url: string]> = [
    ['our gateway', addresses.gateway],
    ['Hive Gateway', addresses.hive],
    ['Hive Gateway (Router Runtime)', addresses.hiveRouter],
    ...(tiers.baseline ? [['our gateway, baseline build', tiers.baseline.gateway] as [string, string]] : []),
  ];
  const results: Measurement[] = [];
  for (const [name, url] of gateways) await checkIsolation(name, url, users);
  // Read first, while the gateway has served only these requests: later its young generation has grown to what full load made it.
  const memory = ONLY === null && !QUICK ? await gatewayMemory(tiers, users) : null;
  if (memory)
    console.log(
      `gateway memory: ${memory.beforeMiB} MiB RSS started, ${memory.afterMiB} MiB with ${memory.sessions} sessions seen, ${memory.afterCollectionMiB} MiB after a full collection (heap used ${memory.heapUsedMiB} MiB)`,
    );

  const counters = async (): Promise<Counters> => {
    const byDatabase = await json<Record<string, Record<string, number>>>(`${addresses.control}/commands`);
    let commands = 0;
    for (const byCommand of Object.values(byDatabase))
      for (const [command, n] of Object.entries(byCommand)) if (!BACKGROUND.some((prefix) => command.startsWith(prefix))) commands += n;
    const subgraphRequests = (await json<{ requests: number }>(`${addresses.control}/subgraph-requests`)).requests;
    // Our builds' counts together: only the one taking its turn changes them.
    const [fetches, ...others] = await Promise.all(
      [addresses.gatewayControl, ...(tiers.baseline ? [tiers.baseline.gatewayControl] : [])].map((control) =>
        json<Counters['fetches']>(`${control}/fetches`),
      ),
    );
    for (const other of others) {
      fetches!.sent += other.sent;
      fetches!.shared += other.shared;
      fetches!.sessions.fromMemory += other.sessions.fromMemory;
      fetches!.sessions.read += other.sessions.read;
    }
    const { services, database } = await json<{ services: number; database: number | null }>(`${addresses.control}/cpu`);
    const { pids } = tiers;
    return {
      commands,
      subgraphRequests,
      fetches: fetches!,
      cpu: { subgraphs: services, database, gateways: new Map(Object.values(pids).map((pid) => [pid, cpuMs(pid)])) },
    };
  };
  const costsOf = (before: Counters, after: Counters, answered: number, target: Target): Costs => ({
    databaseCommands: round((after.commands - before.commands) / answered),
    subgraphCalls: round((after.subgraphRequests - before.subgraphRequests) / answered),
    sharedFetches: target.counters === 'ours' ? round((after.fetches.shared - before.fetches.shared) / answered) : null,
    sessions:
      target.counters === 'ours'
        ? {
            fromMemory: round((after.fetches.sessions.fromMemory - before.fetches.sessions.fromMemory) / answered),
            read: round((after.fetches.sessions.read - before.fetches.sessions.read) / answered),
          }
        : null,
    cpuMs: {
      gateway:
        target.pid === null
          ? null
          : round(((after.cpu.gateways.get(target.pid) ?? 0) - (before.cpu.gateways.get(target.pid) ?? 0)) / answered),
      gatewayPerSubgraphCall:
        target.pid === null || after.subgraphRequests === before.subgraphRequests
          ? null
          : round(
              ((after.cpu.gateways.get(target.pid) ?? 0) - (before.cpu.gateways.get(target.pid) ?? 0)) /
                (after.subgraphRequests - before.subgraphRequests),
            ),
      subgraphs: round((after.cpu.subgraphs - before.cpu.subgraphs) / answered),
      database:
        after.cpu.database === null || before.cpu.database === null ? null : round((after.cpu.database - before.cpu.database) / answered),
    },
  });

  /** What a target's turns add up to: its latencies pooled, its errors, and what its requests cost. */
  interface Turns {
    latencies: number[];
    errors: number;
    seconds: number;
    spent: Counters;
  }
  /**
   * Runs each of `targets` for `DURATION_S` seconds in all, taking turns in `ROUNDS` rounds, after
   * a warm-up of each: run one after another instead, a target's place in the order (first after a
   * paced run, say, or last on a machine that slowed down) weighed as much as the target itself.
   * Every round takes the same order, so that every target waits as long between its turns: an
   * order that alternated gave the first target longer gaps, past the session memory's 30 s, and
   * so more session reads. `turn` runs one target for `seconds` and answers its latencies and
   * errors; the counters are read around it.
   */
  const takeTurns = async (
    count: number,
    warmUp: (i: number) => Promise<unknown>,
    turn: (i: number, seconds: number) => Promise<{ latencies: number[]; errors: number }>,
  ): Promise<Turns[]> => {
    for (let i = 0; i < count; i += 1) {
      random = seededRandom(7);
      await warmUp(i);
    }
    const pooled: Turns[] = Array.from({ length: count }, () => ({ latencies: [], errors: 0, seconds: 0, spent: noCounters() }));
    for (let round = 0; round < ROUNDS; round += 1) {
      for (let place = 0; place < count; place += 1) {
        const i = REVERSE ? count - 1 - place : place;
        random = seededRandom(100 + round);
        const before = await counters();
        const t0 = performance.now();
        const { latencies, errors } = await turn(i, DURATION_S / ROUNDS);
        const seconds = (performance.now() - t0) / 1000;
        const after = await counters();
        const into = pooled[i]!;
        into.latencies.push(...latencies);
        into.errors += errors;
        into.seconds += seconds;
        into.spent = addCounters(into.spent, before, after);
      }
    }
    for (const turns of pooled) turns.latencies.sort((a, b) => a - b);
    return pooled;
  };

  /** As many requests a second as `CONNECTIONS` connections get answered (autocannon), for each target in turns, with what they cost. */
  const load = async (
    scenario: string,
    workload: Measurement['workload'],
    targets: Array<[name: string, target: Target]>,
  ): Promise<void> => {
    const chosen = targets.filter(([name]) => ONLY === null || `${scenario} ${name}`.includes(ONLY));
    if (chosen.length === 0) return;
    for (const [name, target] of chosen) await verify(`${scenario} ${name}`, target);
    const run = (target: Target, seconds: number) => {
      // Each request replaces autocannon's whole request, so it names the host itself (Hive Gateway refuses a request without one).
      const host = new URL(target.origin).host;
      // An answer with GraphQL errors comes with a 200: counted as an error here, as the paced runs and the mix count it.
      let graphqlErrors = 0;
      const latencies: number[] = [];
      const options = {
        url: target.origin,
        connections: CONNECTIONS,
        duration: seconds,
        requests: [
          {
            setupRequest: () => {
              const request = target.draw();
              return { ...request, headers: { host, ...request.headers } };
            },
            onResponse: (status: number, body: string) => {
              if (status === 200 && body.includes('"errors"')) graphqlErrors += 1;
            },
          },
        ],
      };
      return new Promise<{ latencies: number[]; errors: number }>((resolve, reject) => {
        const instance = autocannon(options, (error: Error | null, result: autocannon.Result) => {
          if (error) reject(error);
          else resolve({ latencies, errors: result.errors + result.timeouts + result.non2xx + graphqlErrors });
        });
        instance.on('response', (_client, _status, _bytes, responseTime) => latencies.push(responseTime));
      });
    };
    const turns = await takeTurns(
      chosen.length,
      (i) => run(chosen[i]![1], WARMUP_S),
      (i, seconds) => run(chosen[i]![1], seconds),
    );
    chosen.forEach(([name, target], i) => {
      const { latencies, errors, seconds, spent } = turns[i]!;
      results.push(
        report({
          scenario,
          workload,
          target: name,
          mode: 'max',
          rps: Math.round(latencies.length / seconds),
          p50: percentile(latencies, 50),
          p90: percentile(latencies, 90),
          p99: percentile(latencies, 99),
          errors,
          costs: costsOf(noCounters(), spent, Math.max(1, latencies.length), target),
        }),
      );
    });
  };

  /**
   * The targets compared at a fixed rate (`paced`), taking turns in short segments, the order
   * rotated each round, for `DURATION_S` seconds each in all; each target's latencies are pooled
   * over its segments. Run one after the other instead, the first ran while the machine was still
   * settling from the run before it. Each segment's requests are all answered before the next
   * segment starts, so a queue never carries over from one target to the next.
   */
  const loadPaced = async (scenario: string, targets: Array<[name: string, target: Target]>, rate = FIXED_RATE): Promise<void> => {
    const chosen = targets.filter(([name]) => ONLY === null || `${scenario} ${name}`.includes(ONLY));
    if (chosen.length === 0) return;
    for (const [name, target] of chosen) await verify(`${scenario} ${name}`, target);
    const segmentS = QUICK ? 1 : 2;
    const agents = chosen.map(() => new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS }));
    for (const [i, [, target]] of chosen.entries()) await paced(target, rate, WARMUP_S, agents[i]!);
    const pooled = chosen.map(() => ({ latencies: [] as number[], errors: 0, seconds: 0, sent: 0 }));
    const rounds = Math.max(1, Math.round(DURATION_S / segmentS));
    for (let round = 0; round < rounds; round += 1) {
      for (const i of chosen.map((_, k) => (k + round) % chosen.length)) {
        const result = await paced(chosen[i]![1], rate, segmentS, agents[i]!);
        pooled[i]!.latencies.push(...result.latencies);
        pooled[i]!.errors += result.errors;
        pooled[i]!.sent += result.sent;
        pooled[i]!.seconds += result.sendingSeconds;
      }
    }
    for (const agent of agents) agent.destroy();
    chosen.forEach(([name], i) => {
      const { latencies, errors, seconds, sent } = pooled[i]!;
      latencies.sort((a, b) => a - b);
      results.push(
        report({
          scenario,
          workload: 'many users',
          target: name,
          mode: `${rate}/s`,
          rps: Math.round(sent / seconds),
          p50: percentile(latencies, 50),
          p90: percentile(latencies, 90),
          p99: percentile(latencies, 99),
          errors,
        }),
      );
    });
  };

  const pidOf = (url: string) =>
    url === addresses.hive
      ? tiers.pids.hive
      : url === addresses.hiveRouter
        ? tiers.pids.hiveRouter
        : url === tiers.baseline?.gateway
          ? tiers.pids.baseline!
          : tiers.pids.gateway;
  /** A gateway's target: each request as a random user (or always `only`), with the variables `variables` draws for that user. */
  const asUser = (
    url: string,
    query: string,
    variables: (user: BenchUser) => Record<string, unknown> = () => ({}),
    only?: BenchUser,
  ): Target => ({
    origin: new URL(url).origin,
    counters: url === addresses.gateway || url === tiers.baseline?.gateway || url.startsWith(addresses.rest) ? 'ours' : 'peer',
    pid: pidOf(url),
    draw: () => {
      const user = only ?? pick(users);
      return graphqlRequest(url, query, { token: user.token }, variables(user));
    },
  });
  const restAsUser = (route: (user: BenchUser) => string, only?: BenchUser): Target => ({
    origin: addresses.rest,
    counters: 'ours',
    pid: tiers.pids.gateway,
    draw: () => {
      const user = only ?? pick(users);
      return { method: 'GET', path: route(user), headers: { token: user.token } };
    },
  });
  /** The user subgraph called directly, with the principal the gateway would sign for a random user. */
  const direct = (query: string): Target => ({
    origin: new URL(addresses.subgraphs.user).origin,
    counters: 'direct',
    pid: null,
    draw: () => {
      const n = pick(users);
      const principal = signPrincipal(
        { kind: 'user', userId: n.SvcUserId, sessionId: n.sessionId, channel: 'internet' },
        tiers.internalSecret,
      );
      return graphqlRequest(addresses.subgraphs.user, query, { [PRINCIPAL_HEADER]: principal });
    },
  });

  const s1 = '1 single-subgraph query';
  await load(s1, 'many users', [
    ['subgraph direct', direct(PROFILE)],
    ...gateways.map(([name, url]): [string, Target] => [name, asUser(url, PROFILE)]),
  ]);
  await loadPaced(s1, [
    ['subgraph direct', direct(PROFILE)],
    ...gateways.map(([name, url]): [string, Target] => [name, asUser(url, PROFILE)]),
  ]);

  const s2 = '2 cross-subgraph query';
  await load(
    s2,
    'many users',
    gateways.map(([name, url]) => [name, asUser(url, CROSS)]),
  );

  const s3a = '3 latest transactions';
  await load(s3a, 'many users', [
    ['REST adapter', restAsUser((user) => `/accounts/${user.SvcAccountId}/transactions/latest`)],
    ...gateways.map(([name, url]): [string, Target] => [name, asUser(url, LATEST, (user) => ({ SvcAccountId: user.SvcAccountId }))]),
  ]);
  const s3b = '3 restrictions';
  await load(s3b, 'many users', [
    ['REST adapter', restAsUser(() => '/restrictions')],
    ...gateways.map(([name, url]): [string, Target] => [name, asUser(url, RESTRICTIONS)]),
  ]);
  // The adapter's overhead at a fixed rate, below the route's capacity.
  await loadPaced(
    s3b,
    [
      ['REST adapter', restAsUser(() => '/restrictions')],
      ['our gateway', asUser(addresses.gateway, RESTRICTIONS)],
    ],
    ADAPTER_RATE,
  );

  const mix = '5 mobile app mix';
  const mixed = gateways.filter(([name]) => ONLY === null || `${mix} ${name}`.includes(ONLY));
  const loops: Array<Awaited<ReturnType<typeof prepareMix>>> = [];
  for (const [name, url] of mixed) loops.push(await prepareMix(mix, name, url, pidOf(url), users));
  const mixTurns = await takeTurns(
    loops.length,
    (i) => loops[i]!.warmUp(),
    (i, seconds) => loops[i]!.turn(seconds),
  );
  mixed.forEach(([name, url], i) => {
    const { latencies, errors, seconds, spent } = mixTurns[i]!;
    const target: Target = {
      origin: new URL(url).origin,
      counters: url === addresses.gateway || url === tiers.baseline?.gateway ? 'ours' : 'peer',
      pid: pidOf(url),
      draw: () => ({ method: 'GET', path: '/', headers: {} }),
    };
    results.push(
      report({
        scenario: mix,
        workload: 'many users',
        target: name,
        mode: 'max',
        rps: Math.round(latencies.length / seconds),
        p50: percentile(latencies, 50),
        p90: percentile(latencies, 90),
        p99: percentile(latencies, 99),
        errors,
        costs: costsOf(noCounters(), spent, Math.max(1, latencies.length + errors), target),
        operations: loops[i]!.operations(),
      }),
    );
  });

  // The old workload: one session for every request, where deduplication answers many requests with one call (full runs only).
  const demo = await demoUser(addresses.rest);
  if (!QUICK) {
    await load(
      s1,
      'best case: one session',
      gateways.map(([name, url]) => [name, asUser(url, PROFILE, undefined, demo)]),
    );
    await load(
      s2,
      'best case: one session',
      gateways.map(([name, url]) => [name, asUser(url, CROSS, undefined, demo)]),
    );
  }

  if (ONLY !== null) {
    console.log('--only: no report written.');
    return;
  }

  // Scenario 4: database commands per request with 2 and then 100 cards, each resolving its account in the payments subgraph.
  const commandsPerRequest = async (requests: number) => {
    const target = asUser(addresses.gateway, CARD_LIST, undefined, demo);
    await verify('4 list', target);
    const before = await counters();
    for (let i = 0; i < requests; i += 1) await verify('4 list', target);
    return costsOf(before, await counters(), requests, target).databaseCommands;
  };
  const withTwo = await commandsPerRequest(10);
  await fetch(`${addresses.control}/grow-cards?count=100`);
  const withHundred = await commandsPerRequest(10);
  console.log(`4 database commands per request: ${withTwo} with 2 cards, ${withHundred} with 100`);

  const afterLoadMiB = residentMiB(tiers.pids.gateway);
  console.log(`gateway memory after the load scenarios: ${afterLoadMiB} MiB RSS`);

  const find = (scenario: string, target: string, workload: Measurement['workload'] = 'many users', mode = 'max') =>
    results.find((r) => r.scenario === scenario && r.target === target && r.workload === workload && r.mode === mode);
  const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? null : round(a / b));
  const betterPeer = (scenario: string) => {
    const peers = gateways
      .filter(([name]) => name.startsWith('Hive'))
      .map(([name]) => find(scenario, name))
      .filter((r): r is Measurement => r !== undefined);
    return peers.sort((a, b) => b.rps - a.rps)[0];
  };
  const versusBetterPeer = (scenario: string) => {
    const ours = find(scenario, 'our gateway');
    const peer = betterPeer(scenario);
    return {
      peer: peer?.target ?? null,
      rps: ratio(ours?.rps, peer?.rps),
      p99: ratio(ours?.p99, peer?.p99),
      gatewayCpu: ratio(ours?.costs?.cpuMs.gateway ?? undefined, peer?.costs?.cpuMs.gateway ?? undefined),
      gatewayCpuPerSubgraphCall: ratio(
        ours?.costs?.cpuMs.gatewayPerSubgraphCall ?? undefined,
        peer?.costs?.cpuMs.gatewayPerSubgraphCall ?? undefined,
      ),
    };
  };
  const fixed = `${FIXED_RATE}/s`;
  const overhead = (target: string) =>
    round((find(s1, target, 'many users', fixed)?.p50 ?? NaN) - (find(s1, 'subgraph direct', 'many users', fixed)?.p50 ?? NaN), 1);
  const ratios = {
    's1 ours/better peer': versusBetterPeer(s1),
    's2 ours/better peer': versusBetterPeer(s2),
    's3 latest ours/better peer': versusBetterPeer(s3a),
    's3 restrictions ours/better peer': versusBetterPeer(s3b),
    'mix ours/better peer': versusBetterPeer(mix),
    's1 p50 overhead over the subgraph at 200/s (ms)': Object.fromEntries(gateways.map(([name]) => [name, overhead(name)])),
    [`s3 restrictions REST p50 overhead over GraphQL at ${ADAPTER_RATE}/s (ms)`]: round(
      (find(s3b, 'REST adapter', 'many users', `${ADAPTER_RATE}/s`)?.p50 ?? NaN) -
        (find(s3b, 'our gateway', 'many users', `${ADAPTER_RATE}/s`)?.p50 ?? NaN),
      1,
    ),
  };
  const machine = `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
  const errors = results.reduce((n, r) => n + r.errors, 0);
  const output = {
    date: new Date().toISOString(),
    mode: QUICK ? 'quick' : 'full',
    machine,
    database: process.env.MONGODB_URI ? 'MONGODB_URI' : 'embedded FerretDB',
    population: { users: users.length, transactions: users.reduce((n, u) => n + u.transactions, 0) },
    settings: {
      connections: CONNECTIONS,
      durationSeconds: DURATION_S,
      rounds: ROUNDS,
      turnOrder: REVERSE ? "each scenario's targets last to first (--reverse)" : "each scenario's targets as listed",
      warmupSeconds: WARMUP_S,
      fixedRate: FIXED_RATE,
      adapterRate: ADAPTER_RATE,
      fixedRateLoad: 'evenly paced, open loop (bench/suite.ts paced()); the targets compared take turns in segments',
    },
    results,
    ratios,
    databaseCommandsPerRequest: { cards2: withTwo, cards100: withHundred },
    gatewayMemory: { ...memory, afterLoadMiB },
    errors,
  };
  console.log(JSON.stringify(ratios, null, 2));
  const suffix = `${QUICK ? '.quick' : ''}${REVERSE ? '.reverse' : ''}`;
  writeFileSync(path.join(HERE, `results${suffix}.json`), `${JSON.stringify(output, null, 2)}\n`);
  writeFileSync(path.join(HERE, `results${suffix}.svg`), chart(results, machine));
  if (errors > 0) process.exitCode = 1;
}

/** The operations a mobile app sends, and how often, for a random user each time. */
const MIX: Array<{ name: string; weight: number; query: string; variables: (user: BenchUser) => Record<string, unknown> }> = [
  { name: 'profile', weight: 25, query: PROFILE, variables: () => ({}) },
  { name: 'cards', weight: 20, query: CARDS, variables: () => ({}) },
  { name: 'latest transactions', weight: 25, query: LATEST, variables: (user) => ({ SvcAccountId: user.SvcAccountId }) },
  { name: 'restrictions', weight: 15, query: RESTRICTIONS, variables: () => ({}) },
  {
    name: 'card on/off',
    weight: 10,
    query: CARD_ONOFF,
    variables: (user) => ({ SvcCardId: pick(user.SvcCardIds), onoff: random() < 0.5 ? 'on' : 'off' }),
  },
  {
    name: 'beneficiary change',
    weight: 5,
    query: BENEFICIARY_CHANGE,
    variables: (user) => ({ SvcBeneficiaryId: pick(user.SvcBeneficiaryIds), input: { isFavourite: random() < 0.5 } }),
  },
];

/**
 * The mix's closed loop against one gateway: `CONNECTIONS` loops, each sending a random
 * operation (by its weight) as a random user, the next when the last is answered. `turn` runs it
 * for a while and keeps each operation's latencies and errors; `warmUp` keeps nothing.
 */
async function prepareMix(scenario: string, name: string, url: string, pid: number, users: BenchUser[]) {
  const total = MIX.reduce((n, op) => n + op.weight, 0);
  const choose = () => {
    let x = random() * total;
    for (const op of MIX) if ((x -= op.weight) < 0) return op;
    return MIX[0]!;
  };
  const origin = new URL(url).origin;
  for (const op of MIX) {
    const user = pick(users);
    await verify(`${scenario} ${name} ${op.name}`, {
      origin,
      counters: 'peer',
      pid,
      draw: () => graphqlRequest(url, op.query, { token: user.token }, op.variables(user)),
    });
  }
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const kept = new Map(MIX.map((op) => [op.name, { latencies: [] as number[], errors: 0 }]));
  const run = async (seconds: number, keep: boolean) => {
    const latencies: number[] = [];
    let errors = 0;
    const end = performance.now() + seconds * 1000;
    const loop = async () => {
      while (performance.now() < end) {
        const op = choose();
        const user = pick(users);
        const result = await send(origin, graphqlRequest(url, op.query, { token: user.token }, op.variables(user)), agent);
        const own = kept.get(op.name)!;
        if (result.ok) {
          latencies.push(result.ms);
          if (keep) own.latencies.push(result.ms);
        } else {
          errors += 1;
          if (keep) own.errors += 1;
        }
      }
    };
    await Promise.all(Array.from({ length: CONNECTIONS }, loop));
    return { latencies, errors };
  };
  return {
    warmUp: () => run(WARMUP_S, false),
    turn: (seconds: number) => run(seconds, true),
    /** Each operation's share of the requests, latencies and errors over the turns; closes the loop's connections. */
    operations: () => {
      agent.destroy();
      const answered = [...kept.values()].reduce((n, own) => n + own.latencies.length + own.errors, 0);
      return Object.fromEntries(
        MIX.map((op) => {
          const own = kept.get(op.name)!;
          const sorted = own.latencies.sort((x, y) => x - y);
          return [
            op.name,
            {
              share: round((100 * (sorted.length + own.errors)) / Math.max(1, answered), 1),
              p50: percentile(sorted, 50),
              p99: percentile(sorted, 99),
              errors: own.errors,
            },
          ];
        }),
      );
    },
  };
}

/**
 * Fails the suite unless the gateway answers 100 different users at once each with their own
 * record: deduplication that merged their requests would serve one user's data to the others
 * (and measure far fewer subgraph calls than a correct gateway makes).
 */
async function checkIsolation(name: string, url: string, users: readonly BenchUser[]): Promise<void> {
  const answers = await Promise.all(
    users.slice(0, 100).map(async (user) => {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', token: user.token },
        body: JSON.stringify({ query: PROFILE }),
      });
      const body = (await response.json()) as { data?: { me: { SvcUserId: string } | null } };
      return body.data?.me?.SvcUserId === user.SvcUserId;
    }),
  );
  const wrong = answers.filter((right) => !right).length;
  assert.equal(wrong, 0, `${name} answered ${wrong} of ${answers.length} users sent at once with another user's record`);
}

/** The demo user with one session of its own, for the best case. */
async function demoUser(rest: string): Promise<BenchUser> {
  const login = await fetch(`${rest}/token`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ channel: 'internet', userName: DEMO.userName, password: DEMO.password }),
  });
  const { token } = (await login.json()) as { token: string };
  return {
    SvcUserId: DEMO.userId,
    sessionId: '',
    token,
    SvcAccountId: DEMO.accountId,
    SvcCardIds: [...DEMO.cardIds],
    SvcBeneficiaryIds: [],
    transactions: 40,
  };
}

/** A process's resident memory in MiB, from Linux's /proc/<pid>/status. */
function residentMiB(pid: number): number {
  const line = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return line ? Math.round(Number(line[1]) / 1024) : NaN;
}

/** The gateway process's memory before and after it has seen `LIVE_SESSIONS` sessions, each used once through it. */
async function gatewayMemory(
  tiers: Tiers,
  users: BenchUser[],
): Promise<{ sessions: number; beforeMiB: number; afterMiB: number; afterCollectionMiB: number; heapUsedMiB: number }> {
  const { addresses, pids } = tiers;
  const beforeMiB = residentMiB(pids.gateway);
  const extra = await json<Array<{ token: string }>>(`${addresses.control}/sessions?count=${Math.max(0, LIVE_SESSIONS - users.length)}`);
  const tokens = [...users.map((u) => u.token), ...extra.map((s) => s.token)];
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const origin = new URL(addresses.gateway).origin;
  let next = 0;
  let failed = 0;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (next < tokens.length) {
        const token = tokens[next++]!;
        if (!(await send(origin, graphqlRequest(addresses.gateway, PROFILE, { token }), agent)).ok) failed += 1;
      }
    }),
  );
  agent.destroy();
  assert.equal(failed, 0, `${failed} of the ${tokens.length} sessions were refused`);
  const afterMiB = residentMiB(pids.gateway);
  // What the process holds once its garbage is collected (the gateway's tier runs with --expose-gc), beside what it held as found.
  const collected = await json<{ rss: number; heapUsed: number }>(`${addresses.gatewayControl}/memory`);
  return {
    sessions: tokens.length,
    beforeMiB,
    afterMiB,
    afterCollectionMiB: Math.round(collected.rss / 1048576),
    heapUsedMiB: Math.round(collected.heapUsed / 1048576),
  };
}

/** A bar chart of requests per second by scenario and target. */
function chart(results: Measurement[], machine: string): string {
  const bars = results.filter((r) => r.mode === 'max');
  const width = 960;
  const rowHeight = 22;
  const left = 420;
  const max = Math.max(...bars.map((b) => b.rps), 1);
  const colour = (target: string) =>
    target.startsWith('Hive Gateway (Router')
      ? '#b88230'
      : target.startsWith('Hive')
        ? '#e6a23c'
        : target.startsWith('subgraph')
          ? '#909399'
          : target.startsWith('REST')
            ? '#67c23a'
            : '#409eff';
  const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  const rows = bars.map((bar, i) => {
    const y = 40 + i * rowHeight;
    const length = Math.max(1, Math.round(((width - left - 130) * bar.rps) / max));
    const label = `${bar.workload === 'many users' ? '' : '[best case] '}${bar.scenario}: ${bar.target}`;
    return (
      `<text x="${left - 8}" y="${y + 15}" text-anchor="end">${escape(label)}</text>` +
      `<rect x="${left}" y="${y + 3}" width="${length}" height="${rowHeight - 6}" fill="${colour(bar.target)}"/>` +
      `<text x="${left + length + 6}" y="${y + 15}">${bar.rps} req/s, p99 ${bar.p99} ms</text>`
    );
  });
  const height = 60 + bars.length * rowHeight;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<text x="10" y="20" font-size="14" font-weight="bold">Requests per second (${CONNECTIONS} connections, ${DURATION_S} s each), ${escape(machine)}</text>
${rows.join('\n')}
</svg>
`;
}

const tiers = await startTiers({ profileDir: PROFILE_DIR, ...(BASELINE ? { baseline: BASELINE } : {}) });
try {
  await main(tiers);
} finally {
  // The services stop cleanly (and write their CPU profiles under --profile) before the suite exits.
  await tiers.stop();
}
