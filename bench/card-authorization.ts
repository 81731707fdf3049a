// `npm run bench:authorization`: card-authorization decisions at steady rates (RATES, default
// 50,100,200 messages a second, SECONDS each) through the gateway, for the cards of the benchmark's
// population of users (bench/population.ts), with a local aggregator webhook answering 00. Messages
// mix authorizations, purchases, advices and reversals of earlier purchases over varied cards and
// amounts; some cards are blocked and some users' restrictions refuse large amounts, as in real
// traffic. Our services run in one process as `npm start` runs them (bench/services.ts's stack
// tier); the load generator and the webhook receiver run here. Reports, per rate: decision and
// round-trip times, CPU per message by process, database commands per message, and the delay from
// a decision to its transaction in payments. Then one account under a stream of purchases at the
// top rate: how many its funds cover, its balances after, and how many accounts of the population
// have less available than the overdraft limit allows, and how many of those their approved advices
// (0220, held without the balance condition) do not explain (0 expected). Prints JSON; `npm run bench:authorization > bench/card-authorization.result.json`.
import { cpus } from 'node:os';
import { seededRandom } from '../platform/domain/ach-history.js';
import { DEMO } from '../platform/domain/demo.js';
import { connectionPool, postJson } from '../platform/http/client.js';
import { startWebhookReceiver } from '../scripts/lib/webhook-receiver.js';
import type { BenchUser } from './population.js';
import { startTiers } from './tiers.js';

const RATES = (process.env.RATES ?? '50,100,200').split(',').map(Number);
const SECONDS = Number(process.env.SECONDS ?? 10);
const KEY = 'bench-card-processor-key-0123456789abcdef';
const AUTHORIZE = 'mutation ($input: CardMessageInput!) { authorizeCardMessage(input: $input) { responseCode decidedBy decisionMs } }';

interface Outcome {
  ok: boolean;
  responseCode: string | null;
  decisionMs: number;
  roundTripMs: number;
}

const pct = (values: number[], p: number) => {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! * 100) / 100;
};
const percentiles = (values: number[]) => ({ p50: pct(values, 50), p90: pct(values, 90), p99: pct(values, 99), max: pct(values, 100) });

const receiver = await startWebhookReceiver(DEMO.webhook.secret);
// PROFILE_DIR=<dir>: the services run under `node --cpu-prof`, their profiles written there.
const tiers = await startTiers({
  env: { SERVICE_KEYS: `card-processor=${KEY}` },
  profileDir: process.env.PROFILE_DIR ?? null,
  gateway: 'with-subgraphs',
});
try {
  const { addresses } = tiers;
  const control = async <T>(path: string) => {
    const response = await fetch(`${addresses.control}${path}`);
    if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
    return (await response.json()) as T;
  };
  await control(`/card-webhook?url=${encodeURIComponent(receiver.url)}`);
  const users = await control<BenchUser[]>('/population');
  const cards = users.flatMap((user) => user.SvcCardIds);
  const random = seededRandom(20261127);
  // Up to 64 kept-alive connections through node:http: the load generator shares the machine's two cores with the services.
  const pool = connectionPool(64);
  /** Why messages failed, by status, code and message (or the client's error), with counts. */
  const failures = new Map<string, number>();
  /** Approved purchases by card, for reversals to refer to. */
  const purchases = new Map<string, string[]>();
  let sequence = 0;

  /** The next message of the mix: 40% authorizations, 35% purchases, 15% advices, 10% reversals of an earlier purchase. */
  const nextMessage = () => {
    sequence += 1;
    const svcCardId = cards[Math.floor(random() * cards.length)]!;
    const draw = random();
    const earlier = purchases.get(svcCardId);
    const messageType = draw < 0.4 ? '0100' : draw < 0.75 ? '0200' : draw < 0.9 || !earlier?.length ? '0220' : '0420';
    // Mostly everyday amounts, now and then a large one that some users' restrictions refuse.
    const amount = random() < 0.97 ? Math.round((1 + random() * 120) * 100) / 100 : Math.round(2000 + random() * 8000);
    const stan = String(sequence % 1_000_000).padStart(6, '0');
    const originalStan = messageType === '0420' ? earlier!.shift()! : null;
    return {
      messageType,
      svcCardId,
      amount,
      currency: 'USD',
      merchantName: 'Bench',
      mcc: '5411',
      stan,
      rrn: `B${String(sequence).padStart(11, '0')}`,
      ...(originalStan ? { originalStan } : {}),
    };
  };

  const send = async (input: ReturnType<typeof nextMessage> = nextMessage()): Promise<Outcome> => {
    const started = performance.now();
    try {
      const response = await postJson(
        addresses.gateway,
        { 'content-type': 'application/json', 'x-service-key': KEY },
        JSON.stringify({ query: AUTHORIZE, variables: { input } }),
        30_000,
        pool,
      );
      const roundTripMs = performance.now() - started;
      let body: {
        data?: { authorizeCardMessage: { responseCode: string; decisionMs: number } } | null;
        errors?: Array<{ message: string; extensions?: { code?: string } }>;
      };
      try {
        body = JSON.parse(response.text) as typeof body;
      } catch {
        body = { errors: [{ message: `an answer that is not JSON: ${response.text.slice(0, 80)}` }] };
      }
      const decision = body.data?.authorizeCardMessage;
      if (!decision) {
        const why = `${response.status} ${body.errors?.[0]?.extensions?.code} ${body.errors?.[0]?.message}`;
        failures.set(why, (failures.get(why) ?? 0) + 1);
        return { ok: false, responseCode: null, decisionMs: NaN, roundTripMs };
      }
      if (decision.responseCode === '00' && input.messageType === '0200')
        purchases.set(input.svcCardId, [...(purchases.get(input.svcCardId) ?? []), input.stan]);
      return { ok: true, responseCode: decision.responseCode, decisionMs: decision.decisionMs, roundTripMs };
    } catch (error) {
      // A refused or dropped connection under overload is counted as an error, not the end of the run.
      const { message, cause } = error as Error;
      const why = `${message}${cause ? `: ${(cause as Error).message}` : ''}`;
      failures.set(why, (failures.get(why) ?? 0) + 1);
      return { ok: false, responseCode: null, decisionMs: NaN, roundTripMs: NaN };
    }
  };

  // Warm up: the read model loads on the first message; connections and code paths warm.
  for (let i = 0; i < 100; i += 1) await send();
  type Cpu = { services: number; database: number | null };
  // The stack's own background work (sweeps, timers, the read model's resync), with no traffic: what
  // a message's CPU share includes at a low rate, and what the marginal figures leave out.
  const IDLE_SECONDS = 5;
  const idleBefore = await control<Cpu>('/cpu');
  await new Promise((resolve) => setTimeout(resolve, IDLE_SECONDS * 1000));
  const idleAfter = await control<Cpu>('/cpu');
  const idleMsPerSecond = {
    services: Math.round((idleAfter.services - idleBefore.services) / IDLE_SECONDS),
    database:
      idleAfter.database === null || idleBefore.database === null
        ? null
        : Math.round((idleAfter.database - idleBefore.database) / IDLE_SECONDS),
  };
  const runs = [];
  for (const rate of RATES) {
    failures.clear();
    const since = new Date();
    await control('/commands/reset');
    const cpuBefore = await control<Cpu>('/cpu');
    const ownBefore = process.cpuUsage();
    const total = rate * SECONDS;
    const pending: Array<Promise<Outcome>> = [];
    const t0 = performance.now();
    for (let i = 0; i < total; i += 1) {
      const due = t0 + (i * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      pending.push(send());
    }
    const results = await Promise.all(pending);
    const elapsed = (performance.now() - t0) / 1000;
    // Payments records the approved messages after the answers: wait until none is left to carry (or 30 s).
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 100))) {
      if ((await control<{ pending: number }>('/card-backlog')).pending === 0) break;
    }
    // CPU and commands over the measured period and the recording after it (the waiting's own reads included).
    const cpuAfter = await control<Cpu>('/cpu');
    const own = process.cpuUsage(ownBefore);
    const perMessage = (n: number) => Math.round((n / total) * 100) / 100;
    const commands = await control<Record<string, Record<string, number>>>('/commands');
    const delays = await control<Array<number | null>>(`/card-visibility?since=${since.toISOString()}`);
    const commandsPerMessage = Object.fromEntries(
      Object.entries(commands).map(([db, byCommand]) => [
        db,
        Object.fromEntries(
          Object.entries(byCommand)
            .filter(([, n]) => n > 0)
            .map(([command, n]) => [command, perMessage(n)]),
        ),
      ]),
    );
    const allCommands = perMessage(
      Object.values(commands)
        .flatMap((byCommand) => Object.values(byCommand))
        .reduce((a, b) => a + b, 0),
    );
    const ok = results.filter((r) => r.ok);
    const codes = new Map<string, number>();
    for (const r of ok) codes.set(r.responseCode!, (codes.get(r.responseCode!) ?? 0) + 1);
    const recorded = delays.filter((delay): delay is number => delay !== null);
    const cpuMsPerMessage = {
      services: perMessage(cpuAfter.services - cpuBefore.services),
      database: cpuAfter.database === null || cpuBefore.database === null ? null : perMessage(cpuAfter.database - cpuBefore.database),
      loadGeneratorAndReceiver: perMessage((own.user + own.system) / 1000),
    };
    // Less the idle background over the same time: what the messages themselves cost.
    const measuredSeconds = (performance.now() - t0) / 1000;
    const marginal = {
      services: perMessage(cpuAfter.services - cpuBefore.services - idleMsPerSecond.services * measuredSeconds),
      database:
        cpuMsPerMessage.database === null || idleMsPerSecond.database === null
          ? null
          : perMessage(cpuAfter.database! - cpuBefore.database! - idleMsPerSecond.database * measuredSeconds),
    };
    runs.push({
      targetRate: rate,
      achievedRate: Math.round((results.length / elapsed) * 10) / 10,
      messages: results.length,
      errors: results.length - ok.length,
      failures: Object.fromEntries(failures),
      responseCodes: Object.fromEntries([...codes].sort()),
      decisionMs: percentiles(ok.map((r) => r.decisionMs)),
      roundTripMs: percentiles(ok.map((r) => r.roundTripMs)),
      cpuMsPerMessage: {
        ...cpuMsPerMessage,
        total:
          Math.round((cpuMsPerMessage.services + (cpuMsPerMessage.database ?? 0) + cpuMsPerMessage.loadGeneratorAndReceiver) * 100) / 100,
      },
      marginalCpuMsPerMessage: {
        ...marginal,
        total: Math.round((marginal.services + (marginal.database ?? 0) + cpuMsPerMessage.loadGeneratorAndReceiver) * 100) / 100,
      },
      commandsPerMessage: { all: allCommands, byDatabase: commandsPerMessage },
      recordedInPayments: { transactions: delays.length, recorded: recorded.length, delayMs: percentiles(recorded) },
    });
    console.error(`${rate}/s done`);
  }
  // One account under a stream of purchases at the top rate, spread over its cards, as in the
  // finding that a card spent money its account did not have: how many fit, and what is left.
  type Funds = {
    account: { balance: number; availableBalance: number; holds: number } | null;
    accountsBelowOverdraftLimit: number;
    accountsBelowBeyondAdvices: number;
  };
  const candidates = [...users].filter((user) => user.SvcCardIds.length > 0).sort((a, b) => b.SvcCardIds.length - a.SvcCardIds.length);
  let streamed: BenchUser | undefined;
  for (const user of candidates.slice(0, 20)) {
    sequence += 1;
    const probe = {
      messageType: '0100',
      svcCardId: user.SvcCardIds[0]!,
      amount: 1,
      currency: 'USD',
      merchantName: 'Bench',
      mcc: '5411',
      stan: String(sequence % 1_000_000).padStart(6, '0'),
      rrn: `B${String(sequence).padStart(11, '0')}`,
    };
    if ((await send(probe)).responseCode === '00') {
      streamed = user;
      break;
    }
  }
  let oneAccount: Record<string, unknown> | null = null;
  if (streamed) {
    const rate = Math.max(...RATES);
    const before = await control<Funds>(`/card-funds?account=${streamed.SvcAccountId}`);
    const pending: Array<Promise<Outcome>> = [];
    const t0 = performance.now();
    for (let i = 0; i < rate * SECONDS; i += 1) {
      const wait = t0 + (i * 1000) / rate - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      sequence += 1;
      const svcCardId = streamed.SvcCardIds[i % streamed.SvcCardIds.length]!;
      const amount = Math.round((5 + random() * 45) * 100) / 100;
      pending.push(
        send({
          messageType: '0200',
          svcCardId,
          amount,
          currency: 'USD',
          merchantName: 'Bench',
          mcc: '5411',
          stan: String(sequence % 1_000_000).padStart(6, '0'),
          rrn: `B${String(sequence).padStart(11, '0')}`,
        }),
      );
    }
    const results = await Promise.all(pending);
    const elapsed = (performance.now() - t0) / 1000;
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 100))) {
      if ((await control<{ pending: number }>('/card-backlog')).pending === 0) break;
    }
    const after = await control<Funds>(`/card-funds?account=${streamed.SvcAccountId}`);
    const codes = new Map<string, number>();
    for (const r of results) codes.set(r.responseCode ?? 'error', (codes.get(r.responseCode ?? 'error') ?? 0) + 1);
    oneAccount = {
      cards: streamed.SvcCardIds.length,
      messages: results.length,
      achievedRate: Math.round((results.length / elapsed) * 10) / 10,
      responseCodes: Object.fromEntries([...codes].sort()),
      roundTripMs: percentiles(results.filter((r) => r.ok).map((r) => r.roundTripMs)),
      before: before.account,
      after: after.account,
      accountsBelowOverdraftLimit: after.accountsBelowOverdraftLimit,
      accountsBelowBeyondAdvices: after.accountsBelowBeyondAdvices,
    };
    console.error('one account done');
  }
  console.log(
    JSON.stringify(
      {
        scenario:
          "card authorization through the gateway for the population's cards (40% 0100, 35% 0200, 15% 0220, 10% 0420), aggregator webhook answering 00",
        seconds: SECONDS,
        population: { users: users.length, cards: cards.length },
        idleCpuMsPerSecond: idleMsPerSecond,
        targets: { p99DecisionMsAt200: 20, cpuMsPerMessage: 4, decisionPathCommands: 4, p99RecordedInPaymentsMsAt200: 1000 },
        decisionPath:
          "the card, the message's earlier copy (and a reversal's or completion's original), the webhook configuration for a request, then one insert: 3 or 4 commands, counted by test/cards/card-authorization.e2e.ts; an approved debit adds one graph call to payments, which holds its amount with one update; commandsPerMessage counts everything, the asynchronous carrying and recording included",
        runs,
        oneAccount,
        database: process.env.MONGODB_URI ? 'MONGODB_URI' : 'embedded FerretDB 1.24 (SQLite, with the project patches)',
        services: 'one process, as npm start runs them: the subgraphs, the gateway and the REST adapter calling each other in it',
        machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version },
      },
      null,
      2,
    ),
  );
} finally {
  await tiers.stop();
  await receiver.close();
}
