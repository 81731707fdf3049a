import { createHash, createHmac, randomBytes } from 'node:crypto';
import { homedir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ownValue } from '../contracts/own.js';
import type { ServiceScope } from '../contracts/principal.js';
import { defaultServiceScope, parseServiceKeyScopes } from '../security/service-scope.js';

/** The four subgraphs, in the order the supergraph lists them. */
export const SUBGRAPH_NAMES = ['user', 'cards', 'payments', 'compliance'] as const;
export type SubgraphName = (typeof SUBGRAPH_NAMES)[number];

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

/** Configuration of every service, read from the environment and validated once at start-up. */
export interface Config {
  nodeEnv: 'development' | 'production' | 'test';
  /** Address every server binds to. */
  host: string;
  ports: { gateway: number; rest: number } & Record<SubgraphName, number>;
  /** Where the gateway finds each subgraph. */
  subgraphUrls: Record<SubgraphName, string>;
  /** Where the REST adapter finds the gateway. */
  gatewayUrl: string;
  /** MongoDB to use; unset means the embedded FerretDB. */
  mongodbUri: string | undefined;
  /** Prefix of every database name: `<prefix>user`, `<prefix>cards`, ... */
  dbPrefix: string;
  /** Folder of the embedded FerretDB's SQLite files. */
  dataDir: string;
  /** FerretDB binary to use instead of the cached build. */
  ferretdbBin: string | undefined;
  /** HMAC key that signs the principal the gateway forwards to subgraphs. */
  internalSecret: string;
  /** Delays before each attempt of a webhook or email delivery (the first is usually 0). */
  webhookRetryScheduleMs: number[];
  /** Consecutive failed webhook attempts after which a merchant's endpoint is disabled. */
  webhookDisableAfter: number;
  /** Whether the gateway serves GraphiQL at /graphiql (development by default). */
  graphqlIde: boolean;
  /** Redis for the event bus across processes; unset means the in-process bus (every service in one process). */
  redisUrl: string | undefined;
  /** How long the event log keeps events, and at most how many (EVENT_RETENTION_SECONDS, EVENT_RETENTION_EVENTS). */
  eventRetention: { seconds: number; events: number };
  /** HMAC key of merchant and customer JWTs: JWT_SECRET, or derived from INTERNAL_SECRET. */
  jwtSecret: string;
  /** Where users reach the REST adapter (the specs' `{base_url}`): the request collection's base URL. */
  restPublicUrl: string;
  /** The payment page a sent link's `url` points at (`?link=<link>` is appended). */
  paymentPageUrl: string;
  /** How long a sent payment link stays payable before it becomes Expired. */
  paymentLinkLifetimeSeconds: number;
  /** True when the secret was generated for this process (development only). */
  internalSecretGenerated: boolean;
  tokenLifetimeSeconds: number;
  /**
   * How long the gateway may answer a session token from its memory, without reading the
   * session, after a read found it live; 0 reads every time. Revocations and blocks arrive as
   * events on the bus and end it at once; the age bounds only changes made beside the services.
   */
  sessionCacheSeconds: number;
  /** Failed credential checks of one actor from one address group that lock that pair for `lockPeriodSeconds`. */
  loginMaxFailures: number;
  lockPeriodSeconds: number;
  /**
   * Failed credential checks of one actor from all addresses together within
   * `loginAccountWindowSeconds` of the last one; past it, checks from an address the actor never
   * logged in from are refused with 429 TOO_MANY_ATTEMPTS (docs/security.md: Login lockout).
   */
  loginAccountMaxFailures: number;
  loginAccountWindowSeconds: number;
  /** How long an address group the actor logged in from stays known (passes the account-wide bound). */
  loginKnownSourceDays: number;
  /**
   * Whether an unexpected error's own message and stack trace reach the client (a developer turns
   * it on). Off in every mode by default: the detail goes to the log with the request id.
   */
  exposeErrorDetails: boolean;
  /** The `test` login channel; off by default in production. */
  testChannelEnabled: boolean;
  logLevel: LogLevel;
  /** How long the gateway waits for a subgraph's answer to a read before its fields are UNAVAILABLE (writes are waited for). */
  subgraphTimeoutMs: number;
  /**
   * Which calls between services that `scripts/stack.ts` starts in one process go through its
   * in-process transport, without HTTP (`transportsOf`): `all` the REST adapter's to the gateway, the gateway's to
   * the subgraphs and the session route, and the subgraphs' to the graph; `adapter` only the
   * adapter's; `none` (the default) none, so that development runs the HTTP path production runs.
   */
  inProcessCalls: 'none' | 'adapter' | 'all';
  /** Largest accepted request body, in bytes: the REST adapter's, and the gateway's from the adapter and the subgraphs (uploads travel base64). */
  bodyLimitBytes: number;
  /** What every HTTP server allows a client: time to send its headers and its request, pace of its body, connections. */
  httpLimits: HttpLimits;
  /** Largest request body the gateway's `/graphql` reads from any other client, in bytes. */
  graphqlBodyLimitBytes: number;
  /** Bounds of a GraphQL document's text at the gateway, checked before it is parsed (HTTP and subscriptions). */
  documentLimits: { maxBytes: number; maxTokens: number };
  /**
   * Requests per window at the gateway: per root field (per credential, per client address, and
   * for the sensitive fields, counted once the operation is parsed), and whole requests per
   * credential and per address (counted before the document is parsed).
   */
  rateLimits: {
    windowSeconds: number;
    perCredential: number;
    perAddress: number;
    sensitive: number;
    requestsPerCredential: number;
    requestsPerAddress: number;
  };
  /**
   * Bounds of the gateway's graphql-ws subscriptions (each gateway counts its own): open
   * connections per principal and per client address (an IPv6 address by its /64), subscriptions
   * per principal across its connections, and subscribe messages per `RATE_LIMIT_WINDOW_SECONDS`
   * per connection and per principal (the latter counted with the rate limits: in Redis where
   * `REDIS_URL` is set).
   */
  subscriptionLimits: {
    connectionsPerPrincipal: number;
    connectionsPerAddress: number;
    subscriptionsPerPrincipal: number;
    subscribesPerConnection: number;
    subscribesPerPrincipal: number;
  };
  /** How long an Idempotency-Key and its answer are kept. */
  idempotencyKeyTtlSeconds: number;
  /**
   * `require`: the gateway runs only registered operations (the REST adapter's, the dashboard's
   * and those of `trustedDocumentsFile`); `off`: any operation, and registered ones may be sent by
   * their hash alone.
   */
  trustedDocuments: 'off' | 'require';
  /** An Apollo persisted-query manifest of further trusted documents (other clients' operations). */
  trustedDocumentsFile: string | undefined;
  /** Limits of one GraphQL operation at the gateway. */
  operationLimits: { maxDepth: number; maxAliases: number; maxRootFields: number; maxCost: number };
  /** Lifetime of an aggregator's base token and of its confined token. */
  aggregatorTokenLifetimeSeconds: number;
  confinedTokenLifetimeSeconds: number;
  /** Lifetime of the token a prospect gets from `POST /prospect/data`. */
  prospectTokenLifetimeSeconds: number;
  /** How far a device's proof time stamp may be from the server's clock. */
  deviceProofWindowSeconds: number;
  /** Service keys' names, by the SHA-256 of the key (SERVICE_KEYS). */
  serviceKeyHashes: ReadonlyMap<string, string>;
  /**
   * What each service key may do, by its name (SERVICE_KEY_SCOPES; a key it does not name gets
   * the fields reserved for its name and nothing else). Null only outside production, for a key
   * named after one of the platform's own services: tests use such keys to act as that service.
   */
  serviceKeyScopes: ReadonlyMap<string, ServiceScope | null>;
  /** SMTP server for emails (`smtp://user:pass@host:port`); unset writes them to `outboxDir`. */
  smtpUrl: string | undefined;
  mailFrom: string;
  /** SMS provider webhook (POST `{to, text}`); unset writes texts to `outboxDir`. */
  smsWebhookUrl: string | undefined;
  outboxDir: string;
  /** Who is told when someone tries to recover a hardened user. */
  operatorEmail: string;
  /** Whether webhooks may target loopback or private addresses (development and tests; never by default in production). */
  webhookAllowInternal: boolean;
  /**
   * How far below zero a card may take its account, in whole units of the account's currency
   * (CARD_OVERDRAFT_LIMIT; payments applies it when it holds a card message's amount). 0: only what the account has.
   */
  cardOverdraftLimit: number;
  /** How long an approved card authorization's hold lasts unless completed or reversed first (CARD_HOLD_EXPIRY_SECONDS). */
  cardHoldExpirySeconds: number;
  /** Build the offline geocoder's indexes (1-2 s, ~50 MB) right after start rather than on the first query. */
  geocoderPreload: boolean;
  /** Whether the demo data (with its published credentials) may be loaded: always outside production, only with SEED_DEMO=true in it. */
  seedDemo: boolean;
  /** True when OUTBOX_DIR was set explicitly: writing messages to files was chosen, not defaulted to. */
  outboxChosen: boolean;
  /** Whether a proxy in front of the REST adapter and the gateway sets `x-forwarded-for`. */
  trustProxy: boolean;
  /**
   * Browser origins the gateway and the REST adapter answer (CORS_ORIGINS, comma-separated; a
   * host may end in `:*` for any port). None in production unless set; localhost's in development.
   */
  corsOrigins: readonly string[];
  /** How long a service stays up after SIGTERM, answering but not ready, before it stops accepting (DRAIN_SECONDS). */
  drainSeconds: number;
  /** Where spans go over OTLP/HTTP (OTEL_EXPORTER_OTLP_ENDPOINT, e.g. http://collector:4318); unset exports nothing. */
  otlpEndpoint: string | undefined;
  /** Share of traces recorded and exported (OTEL_TRACES_SAMPLER_ARG, 0 to 1), decided by trace id; a caller's sampled flag is not obeyed. */
  traceSampleRatio: number;
  /**
   * A port of its own for `GET /metrics` and the gateway's `GET /dependencies` (METRICS_PORT): 9464
   * by default in production, so that neither is on the public port; unset elsewhere serves them on
   * the service's own port.
   */
  metricsPort: number | undefined;
}

/**
 * The limits every HTTP server puts on its clients, so that slow or numerous connections cannot
 * hold it: headers within `headersTimeoutMs`, a whole request within `requestTimeoutMs`, a body
 * that never pauses `bodyIdleTimeoutMs` and, once that long under way, averages
 * `bodyMinBytesPerSecond`; at most `maxConnections` connections, `maxConnectionsPerAddress` of them
 * from one client address (0: no cap by address).
 */
export interface HttpLimits {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  bodyIdleTimeoutMs: number;
  bodyMinBytesPerSecond: number;
  maxConnections: number;
  maxConnectionsPerAddress: number;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

/** The repository root, found from this module's own location. */
/** The names our own services sign their internal calls with, which no outside key may take in production. */
const INTERNAL_SERVICE_NAMES: readonly string[] = ['user', 'cards', 'payments', 'compliance', 'gateway', 'provision'];

/** Where production serves `/metrics` and `/dependencies` when METRICS_PORT is unset: never on the public port. */
export const DEFAULT_PRODUCTION_METRICS_PORT = 9464;

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

type Env = Record<string, string | undefined>;

/**
 * Reads and validates the configuration. Every problem is collected and reported at once,
 * naming the variable, so a misconfigured service refuses to start with one clear message.
 */
export function loadConfig(env: Env = process.env, overrides: Partial<Config> = {}): Config {
  const problems: string[] = [];
  const nodeEnvRaw = env.NODE_ENV ?? 'development';
  if (!['development', 'production', 'test'].includes(nodeEnvRaw)) {
    problems.push(`NODE_ENV must be development, production or test (got "${nodeEnvRaw}")`);
  }
  const nodeEnv = (['development', 'production', 'test'].includes(nodeEnvRaw) ? nodeEnvRaw : 'development') as Config['nodeEnv'];

  const int = (name: string, fallback: number, min: number, max: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min || value > max) {
      problems.push(`${name} must be an integer from ${min} to ${max} (got "${raw}")`);
      return fallback;
    }
    return value;
  };
  const bool = (name: string, fallback: boolean): boolean => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    if (['true', '1', 'yes'].includes(raw)) return true;
    if (['false', '0', 'no'].includes(raw)) return false;
    problems.push(`${name} must be true or false (got "${raw}")`);
    return fallback;
  };
  const oneOf = <T extends string>(name: string, values: readonly T[], fallback: T): T => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    if ((values as readonly string[]).includes(raw)) return raw as T;
    problems.push(`${name} must be one of ${values.join(', ')} (got "${raw}")`);
    return fallback;
  };
  const ratio = (name: string, fallback: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const value = Number(raw);
    if (!Number.isFinite(value) || value < 0 || value > 1) {
      problems.push(`${name} must be a number from 0 to 1 (got "${raw}")`);
      return fallback;
    }
    return value;
  };
  const url = (name: string, fallback: string): string => {
    const raw = env[name] || fallback;
    try {
      const parsed = new URL(raw);
      if (!['http:', 'https:'].includes(parsed.protocol)) throw new Error('protocol');
    } catch {
      problems.push(`${name} must be an http(s) URL (got "${raw}")`);
    }
    return raw;
  };

  const host = env.HOST || '127.0.0.1';
  const ports = {
    gateway: int('GATEWAY_PORT', 4000, 0, 65535),
    rest: int('REST_PORT', 8080, 0, 65535),
    user: int('USER_SUBGRAPH_PORT', 4001, 0, 65535),
    cards: int('CARDS_SUBGRAPH_PORT', 4002, 0, 65535),
    payments: int('PAYMENTS_SUBGRAPH_PORT', 4003, 0, 65535),
    compliance: int('COMPLIANCE_SUBGRAPH_PORT', 4004, 0, 65535),
  };
  const local = (port: number, suffix = '/graphql') => `http://127.0.0.1:${port}${suffix}`;
  const restPublicUrl = url('REST_PUBLIC_URL', `http://localhost:${ports.rest}`);
  const subgraphUrls = {
    user: url('USER_SUBGRAPH_URL', local(ports.user)),
    cards: url('CARDS_SUBGRAPH_URL', local(ports.cards)),
    payments: url('PAYMENTS_SUBGRAPH_URL', local(ports.payments)),
    compliance: url('COMPLIANCE_SUBGRAPH_URL', local(ports.compliance)),
  };
  const gatewayUrl = url('GATEWAY_URL', local(ports.gateway));

  const dbPrefix = env.MONGODB_DB_PREFIX ?? 'banking_';
  if (!/^[A-Za-z0-9_-]{0,32}$/.test(dbPrefix)) {
    problems.push(`MONGODB_DB_PREFIX must be up to 32 letters, digits, _ or - (got "${dbPrefix}")`);
  }

  let internalSecret = env.INTERNAL_SECRET ?? '';
  let internalSecretGenerated = false;
  if (internalSecret === '') {
    if (nodeEnv === 'production') {
      problems.push('INTERNAL_SECRET is required in production (at least 32 characters; e.g. `openssl rand -hex 32`)');
    } else {
      internalSecret = randomBytes(32).toString('hex');
      internalSecretGenerated = true;
    }
  } else if (internalSecret.length < 32) {
    problems.push('INTERNAL_SECRET must be at least 32 characters long');
  }

  if (env.JWT_SECRET && env.JWT_SECRET.length < 32) problems.push('JWT_SECRET must be at least 32 characters long');

  const logLevelRaw = env.LOG_LEVEL || (nodeEnv === 'test' ? 'warn' : 'info');
  if (!['debug', 'info', 'warn', 'error', 'silent'].includes(logLevelRaw)) {
    problems.push(`LOG_LEVEL must be debug, info, warn, error or silent (got "${logLevelRaw}")`);
  }

  const serviceKeyHashes = new Map<string, string>();
  for (const entry of (env.SERVICE_KEYS ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean)) {
    const cut = entry.indexOf('=');
    const name = cut > 0 ? entry.slice(0, cut) : '';
    const key = cut > 0 ? entry.slice(cut + 1) : '';
    if (!name || !/^[A-Za-z0-9_-]{1,40}$/.test(name) || !key || key.length < 32) {
      problems.push('SERVICE_KEYS must be a comma-separated list of name=key, each key at least 32 characters');
      break;
    }
    // A key named after one of our own services would act as that service (append audit records,
    // post card transactions): production refuses it; tests use such keys to call internal mutations.
    if (nodeEnv === 'production' && INTERNAL_SERVICE_NAMES.includes(name)) {
      problems.push(
        `SERVICE_KEYS must not name a key ${name}: that name is one of the services' own (${INTERNAL_SERVICE_NAMES.join(', ')})`,
      );
      break;
    }
    serviceKeyHashes.set(createHash('sha256').update(key).digest('hex'), name);
  }
  const serviceKeyScopes = new Map<string, ServiceScope | null>();
  const scoped = env.SERVICE_KEY_SCOPES?.trim()
    ? parseServiceKeyScopes(env.SERVICE_KEY_SCOPES)
    : { scopes: new Map<string, ServiceScope>(), problems: [] };
  problems.push(...scoped.problems);
  const keyNames = new Set(serviceKeyHashes.values());
  for (const name of scoped.scopes.keys()) {
    if (!keyNames.has(name)) problems.push(`SERVICE_KEY_SCOPES names ${name}, which SERVICE_KEYS does not name`);
    else if (INTERNAL_SERVICE_NAMES.includes(name))
      problems.push(`SERVICE_KEY_SCOPES must not scope ${name}: that name is one of the services' own`);
  }
  for (const name of keyNames) {
    serviceKeyScopes.set(name, INTERNAL_SERVICE_NAMES.includes(name) ? null : (scoped.scopes.get(name) ?? defaultServiceScope(name)));
  }
  /** A comma-separated list of browser origins: scheme, host and port, or a host with `:*`. */
  const origins = (name: string, fallback: string): string[] => {
    // Browsers send origins in lower case.
    const list = (env[name] ?? fallback)
      .split(',')
      .map((o) => o.trim().toLowerCase())
      .filter(Boolean);
    for (const origin of list) {
      if (!/^https?:\/\/[A-Za-z0-9.-]+(:(\d{1,5}|\*))?$/.test(origin))
        problems.push(`${name} must list origins such as https://app.example.com or http://localhost:* (got "${origin}")`);
    }
    return list;
  };
  /** A comma-separated list of durations: `0`, `250ms`, `5s`, `5m`, `2h`. */
  const durations = (name: string, fallback: string): number[] => {
    const raw = env[name] || fallback;
    const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
    const values = raw.split(',').map((part) => {
      const match = /^\s*(\d+)\s*(ms|s|m|h)?\s*$/.exec(part);
      return match ? Number(match[1]) * (ownValue(units, match[2] ?? 'ms') ?? 1) : NaN;
    });
    if (values.length === 0 || values.length > 50 || values.some((v) => !Number.isFinite(v) || v > 7 * 24 * 3_600_000)) {
      problems.push(`${name} must be a comma-separated list of up to 50 durations such as 0,5s,5m,2h (got "${raw}")`);
      return [0];
    }
    return values;
  };
  const optionalUrl = (name: string): string | undefined => {
    const raw = env[name];
    if (!raw) return undefined;
    try {
      new URL(raw);
    } catch {
      problems.push(`${name} must be a URL (got "${raw}")`);
    }
    return raw;
  };

  const config: Config = {
    nodeEnv,
    host,
    ports,
    subgraphUrls,
    gatewayUrl,
    mongodbUri: env.MONGODB_URI || undefined,
    dbPrefix,
    dataDir: env.DATA_DIR || path.join(REPO_ROOT, '.data', 'ferretdb'),
    ferretdbBin: env.FERRETDB_BIN || undefined,
    internalSecret,
    internalSecretGenerated,
    redisUrl: optionalUrl('REDIS_URL'),
    eventRetention: {
      seconds: int('EVENT_RETENTION_SECONDS', 3600, 1, 30 * 86_400),
      events: int('EVENT_RETENTION_EVENTS', 100_000, 100, 10_000_000),
    },
    graphqlIde: bool('GRAPHQL_IDE', nodeEnv !== 'production'),
    exposeErrorDetails: bool('EXPOSE_ERROR_DETAILS', false),
    webhookRetryScheduleMs: durations('WEBHOOK_RETRY_SCHEDULE', '0,5s,5m,30m,2h,5h,10h,10h'),
    webhookDisableAfter: int('WEBHOOK_DISABLE_AFTER', 20, 1, 1000),
    jwtSecret: env.JWT_SECRET || createHmac('sha256', internalSecret).update('payment-link-jwt').digest('hex'),
    restPublicUrl,
    paymentPageUrl: url('PAYMENT_PAGE_URL', `${restPublicUrl.replace(/\/$/, '')}/pay`),
    paymentLinkLifetimeSeconds: int('PAYMENT_LINK_LIFETIME_SECONDS', 7 * 24 * 3600, 60, 90 * 24 * 3600),
    tokenLifetimeSeconds: int('TOKEN_LIFETIME_SECONDS', 3600, 60, 30 * 24 * 3600),
    sessionCacheSeconds: int('SESSION_CACHE_SECONDS', 30, 0, 300),
    loginMaxFailures: int('LOGIN_MAX_FAILURES', 5, 1, 100),
    lockPeriodSeconds: int('LOCK_PERIOD_SECONDS', 900, 1, 7 * 24 * 3600),
    loginAccountMaxFailures: int('LOGIN_ACCOUNT_MAX_FAILURES', 20, 1, 10_000),
    loginAccountWindowSeconds: int('LOGIN_ACCOUNT_WINDOW_SECONDS', 3600, 1, 30 * 24 * 3600),
    loginKnownSourceDays: int('LOGIN_KNOWN_SOURCE_DAYS', 90, 1, 3650),
    testChannelEnabled: bool('TEST_CHANNEL_ENABLED', nodeEnv !== 'production'),
    logLevel: logLevelRaw as LogLevel,
    // Uploads of 5 MiB travel base64 in JSON from the adapter to the subgraph: 8 MiB leaves room.
    bodyLimitBytes: int('BODY_LIMIT_BYTES', 8 * 1024 * 1024, 1024, 50 * 1024 * 1024),
    // Apollo Router's default: an ad hoc client has no business sending more; uploads go through the REST routes.
    graphqlBodyLimitBytes: int('GRAPHQL_BODY_LIMIT_BYTES', 2 * 1024 * 1024, 1024, 50 * 1024 * 1024),
    documentLimits: {
      maxBytes: int('GRAPHQL_MAX_DOCUMENT_BYTES', 64 * 1024, 1024, 8 * 1024 * 1024),
      maxTokens: int('GRAPHQL_MAX_TOKENS', 5000, 100, 1_000_000),
    },
    subgraphTimeoutMs: int('SUBGRAPH_TIMEOUT_MS', 30_000, 100, 600_000),
    httpLimits: {
      headersTimeoutMs: int('HTTP_HEADERS_TIMEOUT_MS', 20_000, 500, 300_000),
      requestTimeoutMs: int('HTTP_REQUEST_TIMEOUT_MS', 300_000, 1000, 3_600_000),
      bodyIdleTimeoutMs: int('HTTP_BODY_IDLE_TIMEOUT_MS', 10_000, 100, 300_000),
      bodyMinBytesPerSecond: int('HTTP_BODY_MIN_BYTES_PER_SECOND', 1024, 0, 100 * 1024 * 1024),
      maxConnections: int('HTTP_MAX_CONNECTIONS', 10_000, 1, 1_000_000),
      // Behind a proxy every connection comes from the proxy's address: no cap by address unless set.
      maxConnectionsPerAddress: int('HTTP_MAX_CONNECTIONS_PER_ADDRESS', bool('TRUST_PROXY', false) ? 0 : 256, 0, 1_000_000),
    },
    inProcessCalls: oneOf('IN_PROCESS_CALLS', ['none', 'adapter', 'all'] as const, 'none'),
    rateLimits: {
      windowSeconds: int('RATE_LIMIT_WINDOW_SECONDS', 60, 1, 3600),
      perCredential: int('RATE_LIMIT_PER_CREDENTIAL', 600, 1, 10_000_000),
      perAddress: int('RATE_LIMIT_PER_ADDRESS', 1200, 1, 10_000_000),
      sensitive: int('RATE_LIMIT_SENSITIVE', 20, 1, 10_000_000),
      requestsPerCredential: int('RATE_LIMIT_REQUESTS_PER_CREDENTIAL', 1200, 1, 10_000_000),
      requestsPerAddress: int('RATE_LIMIT_REQUESTS_PER_ADDRESS', 2400, 1, 10_000_000),
    },
    subscriptionLimits: {
      connectionsPerPrincipal: int('WS_MAX_CONNECTIONS_PER_PRINCIPAL', 10, 1, 100_000),
      connectionsPerAddress: int('WS_MAX_CONNECTIONS_PER_ADDRESS', 100, 1, 1_000_000),
      subscriptionsPerPrincipal: int('WS_MAX_SUBSCRIPTIONS_PER_PRINCIPAL', 50, 1, 1_000_000),
      subscribesPerConnection: int('WS_SUBSCRIBE_RATE_PER_CONNECTION', 60, 1, 1_000_000),
      subscribesPerPrincipal: int('WS_SUBSCRIBE_RATE_PER_PRINCIPAL', 240, 1, 10_000_000),
    },
    idempotencyKeyTtlSeconds: int('IDEMPOTENCY_KEY_TTL_SECONDS', 24 * 3600, 60, 30 * 24 * 3600),
    trustedDocuments: oneOf('TRUSTED_DOCUMENTS', ['off', 'require'] as const, 'off'),
    trustedDocumentsFile: env.TRUSTED_DOCUMENTS_FILE || undefined,
    operationLimits: {
      maxDepth: int('GRAPHQL_MAX_DEPTH', 10, 2, 100),
      maxAliases: int('GRAPHQL_MAX_ALIASES', 15, 0, 1000),
      maxRootFields: int('GRAPHQL_MAX_ROOT_FIELDS', 10, 1, 1000),
      maxCost: int('GRAPHQL_MAX_COST', 50_000, 10, 10_000_000),
    },
    aggregatorTokenLifetimeSeconds: int('AGGREGATOR_TOKEN_LIFETIME_SECONDS', 3600, 60, 7 * 24 * 3600),
    confinedTokenLifetimeSeconds: int('CONFINED_TOKEN_LIFETIME_SECONDS', 900, 60, 24 * 3600),
    prospectTokenLifetimeSeconds: int('PROSPECT_TOKEN_LIFETIME_SECONDS', 3600, 60, 7 * 24 * 3600),
    deviceProofWindowSeconds: int('DEVICE_PROOF_WINDOW_SECONDS', 300, 5, 3600),
    serviceKeyHashes,
    serviceKeyScopes,
    smtpUrl: optionalUrl('SMTP_URL'),
    mailFrom: env.MAIL_FROM || 'Banking graph <no-reply@banking-graph.local>',
    smsWebhookUrl: optionalUrl('SMS_WEBHOOK_URL'),
    outboxDir: env.OUTBOX_DIR || path.join(REPO_ROOT, '.data', 'outbox'),
    operatorEmail: env.OPERATOR_EMAIL || 'operator@banking-graph.local',
    trustProxy: bool('TRUST_PROXY', false),
    corsOrigins: origins('CORS_ORIGINS', nodeEnv === 'production' ? '' : 'http://localhost:*,http://127.0.0.1:*'),
    drainSeconds: int('DRAIN_SECONDS', 5, 0, 300),
    otlpEndpoint: optionalUrl('OTEL_EXPORTER_OTLP_ENDPOINT'),
    traceSampleRatio: ratio('OTEL_TRACES_SAMPLER_ARG', 1),
    metricsPort: env.METRICS_PORT
      ? int('METRICS_PORT', 0, 1, 65535)
      : nodeEnv === 'production'
        ? DEFAULT_PRODUCTION_METRICS_PORT
        : undefined,
    seedDemo: bool('SEED_DEMO', nodeEnv !== 'production'),
    outboxChosen: Boolean(env.OUTBOX_DIR),
    geocoderPreload: bool('GEOCODER_PRELOAD', true),
    webhookAllowInternal: bool('WEBHOOK_ALLOW_INTERNAL', nodeEnv !== 'production'),
    cardOverdraftLimit: int('CARD_OVERDRAFT_LIMIT', 0, 0, 1_000_000_000),
    cardHoldExpirySeconds: int('CARD_HOLD_EXPIRY_SECONDS', 7 * 24 * 3600, 1, 30 * 24 * 3600),
    ...overrides,
  };
  if (config.httpLimits.headersTimeoutMs >= config.httpLimits.requestTimeoutMs)
    problems.push('HTTP_HEADERS_TIMEOUT_MS must be shorter than HTTP_REQUEST_TIMEOUT_MS');
  if (nodeEnv === 'production' && config.exposeErrorDetails)
    problems.push('EXPOSE_ERROR_DETAILS is for a developer at work, never in production (it puts internal details in answers)');
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}

/** Folder for per-user caches such as the FerretDB build, shared by every clone. */
export function userCacheDir(env: Env = process.env): string {
  return path.join(env.XDG_CACHE_HOME || path.join(homedir(), '.cache'), 'banking-graph');
}
