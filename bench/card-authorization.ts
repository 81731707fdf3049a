// `npm run bench:authorization`: card-authorization decision latency at a steady 200 messages per
// second through the gateway, with a local aggregator webhook answering 00. The decision time
// excludes the aggregator's own reply time (the engine reports it per message). Our services run
// in one process as `npm start` runs them (bench/services.ts's stack tier), calling each other in
// it; the load generator and the webhook receiver run here. Prints JSON.
import { cpus } from 'node:os';
import { DEMO } from '../platform/demo/demo.js';
import { connectionPool, postJson } from '../platform/http/client.js';
import { startWebhookReceiver } from '../scripts/lib/webhook-receiver.js';
import { startTiers } from './tiers.js';

const RATE = Number(process.env.RATE ?? 200);
const SECONDS = Number(process.env.SECONDS ?? 10);
const KEY = 'bench-card-processor-key-0123456789abcdef';
const MIX = ['0100', '0200', '0220', '0100'] as const;

const receiver = await startWebhookReceiver(DEMO.webhook.secret);
// PROFILE_DIR=<dir>: the services run under `node --cpu-prof`, their profiles written there.
const tiers = await startTiers({ env: { SERVICE_KEYS: `card-processor=${KEY}` }, profileDir: process.env.PROFILE_DIR ?? null, gateway: 'with-subgraphs' });
try {
  const { addresses } = tiers;
  const pointed = await fetch(`${addresses.control}/card-webhook?url=${encodeURIComponent(receiver.url)}`);
  if (!pointed.ok) throw new Error(`could not point the webhook at the receiver: ${pointed.status}`);
  /** Why messages failed, by status, code and message (or the client's error), with counts. */
  const failures = new Map<string, number>();
  // Up to 64 kept-alive connections through node:http: the load generator shares the machine's two
  // cores with the services, and undici's fetch cost about 3 ms of CPU a message here.
  const pool = connectionPool(64);
  const send = async (i: number): Promise<{ ok: boolean; decisionMs: number; roundTripMs: number }> => {
    const started = performance.now();
    const response = await postJson(addresses.gateway, { 'content-type': 'application/json', 'x-service-key': KEY }, JSON.stringify({
      query: 'mutation ($input: CardMessageInput!) { authorizeCardMessage(input: $input) { responseCode decisionMs } }',
      variables: { input: { messageType: MIX[i % MIX.length], svcCardId: DEMO.cardIds[0], amount: 1 + (i % 50), currency: 'USD', merchantName: 'Bench', mcc: '5411', stan: String(i % 1_000_000).padStart(6, '0'), rrn: `B${String(i).padStart(11, '0')}` } },
    }), 30_000, pool);
    let body: { data?: { authorizeCardMessage: { responseCode: string; decisionMs: number } } | null; errors?: Array<{ message: string; extensions?: { code?: string } }> };
    try {
      body = JSON.parse(response.text) as typeof body;
    } catch {
      // A proxy's or a crashed server's page: counted under its status.
      body = { errors: [{ message: `an answer that is not JSON: ${response.text.slice(0, 80)}` }] };
    }
    if (!body.data) {
      const why = `${response.status} ${body.errors?.[0]?.extensions?.code} ${body.errors?.[0]?.message}`;
      failures.set(why, (failures.get(why) ?? 0) + 1);
    }
    return { ok: Boolean(body.data), decisionMs: body.data?.authorizeCardMessage.decisionMs ?? NaN, roundTripMs: performance.now() - started };
  };
  // A message that fails (a refused or dropped connection under overload) is counted as an error, not the end of the run.
  const sendCounted = (i: number) => send(i).catch((error: unknown) => {
    const { message, cause } = error as Error;
    const why = `${message}${cause ? `: ${(cause as Error).message}` : ''}`;
    failures.set(why, (failures.get(why) ?? 0) + 1);
    return { ok: false, decisionMs: NaN, roundTripMs: NaN };
  });
  // Warm up, then send at a steady rate for the measured period.
  for (let i = 0; i < 50; i += 1) await send(1_000_000 + i);
  await fetch(`${addresses.control}/commands/reset`);
  type Cpu = { services: number; database: number | null };
  const cpuBefore = (await (await fetch(`${addresses.control}/cpu`)).json()) as Cpu;
  const ownBefore = process.cpuUsage();
  const total = RATE * SECONDS;
  const pending: Array<Promise<{ ok: boolean; decisionMs: number; roundTripMs: number }>> = [];
  const t0 = performance.now();
  for (let i = 0; i < total; i += 1) {
    const due = t0 + (i * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    pending.push(sendCounted(i));
  }
  const results = await Promise.all(pending);
  const elapsed = (performance.now() - t0) / 1000;
  // CPU time a message, by process, over the measured period (the sweeps that ran meanwhile included).
  const cpuAfter = (await (await fetch(`${addresses.control}/cpu`)).json()) as Cpu;
  const own = process.cpuUsage(ownBefore);
  const perMessage = (ms: number) => Math.round((ms / total) * 100) / 100;
  const cpuMsPerMessage = {
    services: perMessage(cpuAfter.services - cpuBefore.services),
    database: cpuAfter.database === null || cpuBefore.database === null ? null : perMessage(cpuAfter.database - cpuBefore.database),
    loadGeneratorAndReceiver: perMessage((own.user + own.system) / 1000),
  };
  // Every database command of the measured period, timed sweeps included, per message sent.
  const commands = (await (await fetch(`${addresses.control}/commands`)).json()) as Record<string, Record<string, number>>;
  const commandsPerMessage = Object.fromEntries(Object.entries(commands).map(([db, byCommand]) => [db, Object.fromEntries(Object.entries(byCommand).map(([command, n]) => [command, perMessage(n)]))]));
  const pct = (values: number[], p: number) => {
    const sorted = [...values].sort((a, b) => a - b);
    return Math.round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! * 100) / 100;
  };
  const decisions = results.filter((r) => r.ok).map((r) => r.decisionMs);
  const roundTrips = results.filter((r) => r.ok).map((r) => r.roundTripMs);
  console.log(JSON.stringify({
    scenario: 'card authorization decisions through the gateway, aggregator webhook answering 00',
    targetRate: RATE, achievedRate: Math.round((results.length / elapsed) * 10) / 10, messages: results.length, errors: results.filter((r) => !r.ok).length, failures: Object.fromEntries(failures),
    decisionMs: { p50: pct(decisions, 50), p90: pct(decisions, 90), p99: pct(decisions, 99) },
    roundTripMs: { p50: pct(roundTrips, 50), p90: pct(roundTrips, 90), p99: pct(roundTrips, 99) },
    targetP99DecisionMs: 20,
    cpuMsPerMessage,
    commandsPerMessage,
    database: process.env.MONGODB_URI ? 'MONGODB_URI' : 'embedded FerretDB 1.24 (SQLite, with the project patches)',
    services: 'one process, as npm start runs them: the subgraphs, the gateway and the REST adapter calling each other in it',
    machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version },
  }, null, 2));
} finally {
  await tiers.stop();
  await receiver.close();
}
