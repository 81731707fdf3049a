import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { detached } from '../runtime/detached.js';

/** Every metric of this process: its services' own, labelled by service where several share it, and Node's. */
export const registry = new Registry();
collectDefaultMetrics({ register: registry });

/** Latency buckets, in seconds: from a cached read to a slow write. */
const LATENCY = [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Requests answered over HTTP (and in this process), by service, method, route template and status: rate, errors and latency. */
export const httpRequests = new Histogram({
  name: 'http_server_request_duration_seconds',
  help: 'HTTP requests answered, by service, method, route template and status.',
  labelNames: ['service', 'method', 'route', 'status'] as const,
  buckets: LATENCY,
  registers: [registry],
});

/** GraphQL operations executed, by service, operation name, type and outcome (ok, or error when any error was answered). */
export const graphqlOperations = new Histogram({
  name: 'graphql_operation_duration_seconds',
  help: 'GraphQL operations executed, by service, operation name, operation type and outcome.',
  labelNames: ['service', 'operation', 'type', 'outcome'] as const,
  buckets: LATENCY,
  registers: [registry],
});

/** The gateway's fetches to its subgraphs, by subgraph and outcome (ok, error: unreachable or 5xx). */
export const subgraphFetches = new Histogram({
  name: 'gateway_subgraph_fetch_duration_seconds',
  help: 'Fetches the gateway sent to a subgraph, by subgraph and outcome.',
  labelNames: ['subgraph', 'outcome'] as const,
  buckets: LATENCY,
  registers: [registry],
});

/** Reads answered by an identical read already in flight, not sent again. */
export const deduplicatedFetches = new Counter({
  name: 'gateway_subgraph_fetches_deduplicated_total',
  help: 'Subgraph reads answered by an identical read already in flight.',
  labelNames: ['subgraph'] as const,
  registers: [registry],
});

/** Whether each subgraph answered its /ready when scraped: the dependencies' readiness, kept out of the gateway's own probe. */
export const subgraphReady = new Gauge({
  name: 'gateway_subgraph_ready',
  help: '1 when the subgraph answered /ready when scraped (checked at most once a second), else 0.',
  labelNames: ['subgraph'] as const,
  registers: [registry],
  async collect() {
    await readAtScrape(this, readinessReaders);
  },
});

/** Database commands, by database, command name and outcome. */
export const databaseCommands = new Histogram({
  name: 'mongodb_command_duration_seconds',
  help: 'MongoDB commands sent, by database, command and outcome.',
  labelNames: ['database', 'command', 'outcome'] as const,
  buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5],
  registers: [registry],
});

/** Session tokens the gateway looked up: answered from memory, or by a read of the session. */
export const sessionLookups = new Counter({
  name: 'gateway_session_lookups_total',
  help: 'Session tokens looked up by the gateway, by source (memory: a cache hit; read: the session route).',
  labelNames: ['source'] as const,
  registers: [registry],
});

/** Operations refused by a rate limit, by the limit that refused them. */
export const rateLimitRefusals = new Counter({
  name: 'gateway_rate_limit_refusals_total',
  help: 'Operations refused by a rate limit, by limit.',
  labelNames: ['limit'] as const,
  registers: [registry],
});

/** Subscription connections and subscribe messages refused by a cap or rate at the gateway, by limit. */
export const subscriptionRefusals = new Counter({
  name: 'gateway_subscription_refusals_total',
  help: 'graphql-ws connections and subscribe messages refused by a cap or a rate, by limit.',
  labelNames: ['limit'] as const,
  registers: [registry],
});

/** The limits `subscriptionRefusals` counts, each started at zero. */
export const SUBSCRIPTION_LIMITS = [
  'connections-per-principal',
  'connections-per-address',
  'subscriptions-per-connection',
  'subscriptions-per-principal',
  'subscribe-rate-per-connection',
  'subscribe-rate-per-principal',
] as const;

/** GraphQL documents refused before parsing, by the limit they broke and the path they came by. */
export const documentRefusals = new Counter({
  name: 'gateway_document_refusals_total',
  help: 'GraphQL documents refused before parsing (too many bytes or tokens), by limit and path (http, subscription).',
  labelNames: ['limit', 'via'] as const,
  registers: [registry],
});

/** Request bodies refused for their size before they were read, by service. */
export const bodyRefusals = new Counter({
  name: 'http_body_refusals_total',
  help: 'Request bodies refused as too large (413), by service.',
  labelNames: ['service'] as const,
  registers: [registry],
});

/** Connections a server refused or dropped: over its cap, over the cap of one address, or a body sent too slowly. */
export const connectionRefusals = new Counter({
  name: 'http_server_connections_refused_total',
  help: 'Connections refused (server_cap, address_cap) or dropped (slow_body), by service and reason.',
  labelNames: ['service', 'reason'] as const,
  registers: [registry],
});

/** Subscriptions registered on this gateway now, by transport (graphql-ws, sse, multipart). */
export const subscriptions = new Gauge({
  name: 'gateway_subscriptions',
  help: 'Subscriptions registered on this gateway and receiving events, by transport (graphql-ws, sse, multipart).',
  labelNames: ['service', 'transport'] as const,
  registers: [registry],
  async collect() {
    await readAtScrape(this, subscriptionReaders);
  },
});

/** How long after it was stored an event reached a gateway through the bus. */
export const eventBusLag = new Histogram({
  name: 'event_bus_lag_seconds',
  help: 'Time from an event stored in an outbox to its arrival at a gateway through the bus.',
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  registers: [registry],
});

/** Subscriptions resumed from a position of the event log, by outcome (caught_up, expired, cut: ended before it caught up). */
export const subscriptionResumes = new Counter({
  name: 'gateway_subscription_resumes_total',
  help: 'Subscriptions resumed after a position of the event log, by outcome (caught_up, expired, cut).',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

/** How long a resumed subscription took to receive what it missed, and how many events that was. */
export const subscriptionCatchUp = new Histogram({
  name: 'gateway_subscription_catch_up_seconds',
  help: 'Time from a resumed subscription starting to its having every event it missed.',
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
  registers: [registry],
});
export const replayedEvents = new Counter({
  name: 'gateway_subscription_replayed_events_total',
  help: 'Events sent to resumed subscriptions from the event log.',
  registers: [registry],
});

/** Webhook and email delivery attempts, by kind and outcome. */
export const deliveryAttempts = new Counter({
  name: 'delivery_attempts_total',
  help: 'Webhook and email delivery attempts, by kind (webhook, email) and outcome (delivered, failed).',
  labelNames: ['kind', 'outcome'] as const,
  registers: [registry],
});

/** Work waiting in a queue (an outbox lane, pending deliveries), by the database that holds it, read when scraped. */
export const queueDepth = new Gauge({
  name: 'queue_depth',
  help: 'Items waiting in a queue, by the database that holds it and queue, read at scrape time.',
  labelNames: ['database', 'queue'] as const,
  registers: [registry],
  async collect() {
    await readAtScrape(this, depthReaders);
  },
});

/** What a gauge reads when scraped: the labels of a series and how to read its value now. */
type ScrapeReader = { labels: Record<string, string>; read: () => Promise<number> };
const readinessReaders = new Set<ScrapeReader>();
const subscriptionReaders = new Set<ScrapeReader>();
const depthReaders = new Set<ScrapeReader>();

async function readAtScrape(gauge: Gauge, readers: Set<ScrapeReader>): Promise<void> {
  await Promise.all(
    [...readers].map(async ({ labels, read }) => {
      // A dependency that is away must not fail the scrape: the series is then not reported.
      const value = await read().catch(() => null);
      if (value === null) gauge.remove(labels);
      else gauge.set(labels, value);
    }),
  );
}

function reportAtScrape(gauge: Gauge, readers: Set<ScrapeReader>, labels: Record<string, string>, read: () => Promise<number>): () => void {
  const reader = { labels, read };
  readers.add(reader);
  return () => {
    readers.delete(reader);
    gauge.remove(labels);
  };
}

/** Reports the depth of a queue held in `database` at every scrape until the returned function is called. */
export const reportQueueDepth = (database: string, queue: string, read: () => Promise<number>) =>
  reportAtScrape(queueDepth, depthReaders, { database, queue }, read);

/** Reports a subgraph's readiness (1 or 0) at every scrape until the returned function is called. */
export const reportSubgraphReadiness = (subgraph: string, read: () => Promise<number>) =>
  reportAtScrape(subgraphReady, readinessReaders, { subgraph }, read);

/** Reports a gateway's subscription count over a transport at every scrape until the returned function is called. */
export const reportSubscriptions = (service: string, transport: string, read: () => Promise<number>) =>
  reportAtScrape(subscriptions, subscriptionReaders, { service, transport }, read);

/**
 * Starts the gateway's counters at zero for every label value they can take, so that a rate
 * over them exists (and alerts can read it) before the first refusal or shared fetch.
 */
export function zeroGatewayCounters(subgraphs: readonly string[]): void {
  for (const subgraph of subgraphs) deduplicatedFetches.inc({ subgraph }, 0);
  for (const source of ['memory', 'read']) sessionLookups.inc({ source }, 0);
  for (const limit of ['sensitive', 'per-credential', 'per-address', 'requests-per-credential', 'requests-per-address'])
    rateLimitRefusals.inc({ limit }, 0);
  for (const limit of ['bytes', 'tokens']) for (const via of ['http', 'subscription']) documentRefusals.inc({ limit, via }, 0);
  for (const limit of SUBSCRIPTION_LIMITS) subscriptionRefusals.inc({ limit }, 0);
  for (const outcome of ['caught_up', 'expired', 'cut']) subscriptionResumes.inc({ outcome }, 0);
}

/** Starts the delivery attempts at zero for every kind and outcome (see `zeroGatewayCounters`). */
export function zeroDeliveryCounters(): void {
  for (const kind of ['webhook', 'email']) for (const outcome of ['delivered', 'failed']) deliveryAttempts.inc({ kind, outcome }, 0);
}

/**
 * A label value taken from clients (an operation name) kept to a bounded set: past `max`
 * distinct values, for a value that is not a GraphQL name, or for a new one not to be admitted
 * (`admit: false`), it is `other`. A client naming
 * each request differently cannot grow the metrics without bound.
 */
export function boundedLabel(seen: Set<string>, value: string | null | undefined, options: { admit?: boolean; max?: number } = {}): string {
  const { admit = true, max = 500 } = options;
  if (!value) return 'anonymous';
  // A copy each time: a label prom-client keeps must not be a slice of the request's document.
  if (seen.has(value)) return detached(value);
  if (!admit || seen.size >= max || !/^[_A-Za-z][_0-9A-Za-z]{0,99}$/.test(value)) return 'other';
  const label = detached(value);
  seen.add(label);
  return label;
}

/** The text exposition of every metric of this process, and its content type. */
export async function metricsExposition(): Promise<{ contentType: string; text: string }> {
  return { contentType: registry.contentType, text: await registry.metrics() };
}
