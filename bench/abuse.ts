// `npm run bench:abuse`: what one client at one address can make the stack do. The
// whole stack runs in this process with its defaults for every limit, as `npm start` runs it. For each attack, at
// ATTACK_RATE requests a second for SECONDS: how many were refused and how, the gateway process's
// CPU per attacking request (idle CPU of the same length subtracted), and, meanwhile, the REST
// adapter's /health latency (polled every 20 ms) and an ordinary user's `me` query, from another
// child process (the attacker's writes would delay its own timings). Prints JSON.
import { fork } from 'node:child_process';
import { request } from 'node:http';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { createLogger } from '../platform/runtime/logger.js';
import { startStack } from '../scripts/stack.js';
import { withOneProcessBench } from './one-process.js';

const ATTACK_RATE = Number(process.env.ATTACK_RATE ?? 50);
const SECONDS = Number(process.env.ABUSE_SECONDS ?? 10);

/** One attack: what the attacker sends, as a POST body to the gateway's /graphql or as the document of a graphql-ws `subscribe` (after a `connection_init` with a user's token). */
interface Attack {
  name: string;
  via: 'http' | 'subscribe';
  body: string;
}

/** The document: N aliases of `__typename`. */
const aliases = (count: number) => `{ ${Array.from({ length: count }, (_, i) => `a${i}: __typename`).join(' ')} }`;

const ATTACKS: Attack[] = [
  { name: '7.5 MiB document (400,000 aliases), anonymous', via: 'http', body: JSON.stringify({ query: aliases(400_000) }) },
  {
    name: '1.9 MiB document (under the GraphQL body limit, over the document limit)',
    via: 'http',
    body: JSON.stringify({ query: aliases(100_000) }),
  },
  {
    name: '60 KiB document of 30,000 tokens (under the document size limit, over the token limit)',
    via: 'http',
    body: JSON.stringify({ query: `{ ${'a '.repeat(30_000)}}` }),
  },
  { name: "3.7 MiB subscribe message (200,000 aliases), a user's token", via: 'subscribe', body: `subscription ${aliases(200_000)}` },
  { name: "60 KiB subscribe document of 30,000 tokens, a user's token", via: 'subscribe', body: `subscription { ${'a '.repeat(30_000)}}` },
];

interface PhaseReport {
  sent: number;
  /** HTTP statuses (0: reset before an answer), or how a WebSocket ended. */
  statuses: Record<string, number>;
  healthMs: number[];
  userMs: number[];
  userStatuses: Record<string, number>;
}

if (process.env.ABUSE_CLIENT) {
  // The child: attacker, prober and user, against the ports it is given.
  const { gateway, rest, token } = JSON.parse(process.env.ABUSE_CLIENT) as { gateway: string; rest: string; token: string };
  const post = (url: string, body: string, headers: Record<string, string> = {}) =>
    new Promise<number>((resolve) => {
      const req = request(
        url,
        { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers } },
        (res) => {
          res.resume();
          res.once('end', () => resolve(res.statusCode ?? 0));
        },
      );
      // The server answers before reading a body it refuses, and closes: the rest of the write fails.
      // A reset before the answer was read counts as status 0.
      req.once('error', () => resolve(0));
      req.end(body);
    });
  const count = (table: Record<string, number>, status: number | string) => (table[String(status)] = (table[String(status)] ?? 0) + 1);
  const role = process.env.ABUSE_ROLE;
  /** One WebSocket: `connection_init` with the token, then the document as a `subscribe`; answers how it ended (a close code, or the error's code). */
  const subscribe = (document: string) =>
    new Promise<string>((resolve) => {
      const socket = new WebSocket(`${gateway.replace('http', 'ws')}/graphql`, 'graphql-transport-ws');
      const done = (outcome: string) => {
        resolve(outcome);
        socket.terminate();
      };
      socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: { token } })));
      socket.on('message', (data: Buffer) => {
        const message = JSON.parse(data.toString()) as { type: string; payload?: Array<{ extensions?: { code?: string } }> };
        if (message.type === 'connection_ack') socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: document } }));
        else if (message.type === 'error') done(`error ${message.payload?.[0]?.extensions?.code ?? ''}`);
      });
      socket.on('close', (code) => done(`closed ${code}`));
      socket.on('error', () => done('reset'));
    });
  const runPhase = async (message: { type: 'phase'; via: Attack['via']; body: string; rate: number; seconds: number }) => {
    const report: PhaseReport = { sent: 0, statuses: {}, healthMs: [], userMs: [], userStatuses: {} };
    const until = performance.now() + message.seconds * 1000;
    if (role === 'observer') {
      // Its own process: the attacker's writes must not delay its timings.
      const probing = (async () => {
        while (performance.now() < until) {
          const started = performance.now();
          await fetch(`${rest}/health`).then((r) => r.text());
          report.healthMs.push(performance.now() - started);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      })();
      const using = (async () => {
        while (performance.now() < until) {
          const started = performance.now();
          const response = await fetch(`${gateway}/graphql`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', token },
            body: JSON.stringify({ query: '{ me { firstName } }' }),
          });
          await response.text();
          count(report.userStatuses, response.status);
          report.userMs.push(performance.now() - started);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      })();
      await Promise.all([probing, using]);
    } else {
      const attacks: Array<Promise<void>> = [];
      const t0 = performance.now();
      for (let i = 0; message.rate > 0; i += 1) {
        const due = t0 + (i * 1000) / message.rate;
        if (due >= until) break;
        const wait = due - performance.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        report.sent += 1;
        attacks.push(
          (message.via === 'http' ? post(`${gateway}/graphql`, message.body) : subscribe(message.body)).then(
            (status) => void count(report.statuses, status),
          ),
        );
      }
      await Promise.all(attacks);
    }
    process.send!({ type: 'report', report });
  };
  process.on(
    'message',
    (message: { type: 'phase'; via: Attack['via']; body: string; rate: number; seconds: number }) => void runPhase(message),
  );
  process.send!({ type: 'ready' });
} else {
  // Every limit at its default: what a deployment gets (REDIS_URL where it is set, as the others).
  await withOneProcessBench('abuse', {}, async ({ config, mongo, demoToken }) => {
    const stack = await startStack(config, createLogger('error'), mongo);
    const token = await demoToken();
    const child = (role: 'attacker' | 'observer') =>
      fork(fileURLToPath(import.meta.url), [], {
        execArgv: ['--import', 'tsx'],
        env: {
          ...process.env,
          ABUSE_ROLE: role,
          ABUSE_CLIENT: JSON.stringify({ gateway: stack.gateway.url, rest: stack.restAdapter.url, token }),
        },
      });
    const children = [child('attacker'), child('observer')] as const;
    const next = <T>(from: ReturnType<typeof child>, type: string) =>
      new Promise<T>((resolve) => {
        const onMessage = (message: { type: string } & T) => {
          if (message.type !== type) return;
          from.off('message', onMessage as (message: unknown) => void);
          resolve(message);
        };
        from.on('message', onMessage as (message: unknown) => void);
      });
    await Promise.all(children.map((c) => next(c, 'ready')));
    /** Runs one phase in both children; the attacker's report with the observer's timings. */
    const phase = async (attack: Pick<Attack, 'via' | 'body'>, rate: number): Promise<PhaseReport> => {
      const reports = children.map((c) => next<{ report: PhaseReport }>(c, 'report'));
      for (const c of children) c.send({ type: 'phase', ...attack, rate, seconds: SECONDS });
      const [attacker, observer] = await Promise.all(reports);
      return {
        ...attacker!.report,
        healthMs: observer!.report.healthMs,
        userMs: observer!.report.userMs,
        userStatuses: observer!.report.userStatuses,
      };
    };
    const cpuMs = () => {
      const { user, system } = process.cpuUsage();
      return (user + system) / 1000;
    };
    const pct = (values: number[], p: number) => {
      const sorted = [...values].sort((a, b) => a - b);
      return Math.round((sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN) * 10) / 10;
    };
    // The stack's own idle CPU over a phase's length (timers, the prober's and the user's requests are in the phases too).
    const quietBefore = cpuMs();
    const quietReport = await phase({ via: 'http', body: '' }, 0);
    const quiet = { cpuMs: cpuMs() - quietBefore };
    const results = [];
    for (const attack of ATTACKS) {
      const before = cpuMs();
      const report = await phase(attack, ATTACK_RATE);
      const spent = cpuMs() - before;
      results.push({
        attack: attack.name,
        bodyBytes: Buffer.byteLength(attack.body),
        sent: report.sent,
        answers: report.statuses,
        gatewayCpuMsPerRequest: Math.round(((spent - quiet.cpuMs) / Math.max(1, report.sent)) * 10) / 10,
        healthMs: {
          p50: pct(report.healthMs, 50),
          p99: pct(report.healthMs, 99),
          max: pct(report.healthMs, 100),
          samples: report.healthMs.length,
        },
        ordinaryUser: { answers: report.userStatuses, p50Ms: pct(report.userMs, 50), p99Ms: pct(report.userMs, 99) },
      });
    }
    console.log(
      JSON.stringify(
        {
          scenario: `one client address, ${ATTACK_RATE} requests a second for ${SECONDS} s per attack, against every service in one process with every limit at its default`,
          targets: { gatewayCpuMsPerRefusal: 50, healthP99Ms: 100 },
          idleCpuMsPerPhase: Math.round(quiet.cpuMs),
          quiet: {
            healthMs: { p50: pct(quietReport.healthMs, 50), p99: pct(quietReport.healthMs, 99) },
            ordinaryUserP99Ms: pct(quietReport.userMs, 99),
          },
          results,
          machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version },
        },
        null,
        2,
      ),
    );
    for (const c of children) c.kill();
    await stack.stop();
  });
}
