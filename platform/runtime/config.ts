import { homedir } from 'node:os';
import path from 'node:path';
import type { z } from 'zod';
import type { ServiceScope } from '../contracts/principal.js';
import { defaultServiceScope } from '../security/service-scope.js';
import { ENVIRONMENT, INTERNAL_SERVICE_NAMES, typeIssueMessage } from './config-schema.js';

export { DEFAULT_PRODUCTION_METRICS_PORT, REPO_ROOT, type LogLevel } from './config-schema.js';

/** The four subgraphs, in the order the supergraph lists them. */
export const SUBGRAPH_NAMES = ['user', 'cards', 'payments', 'compliance'] as const;

/** One of the four subgraphs. */
export type SubgraphName = (typeof SUBGRAPH_NAMES)[number];

type Env = Record<string, string | undefined>;

/**
 * The settings, grouped as the services read them, from the environment's variables
 * (config-schema.ts defines each: its type, bounds, default and meaning).
 */
function toConfig({ values: env, given }: z.output<typeof ENVIRONMENT>) {
  return {
    nodeEnv: env.NODE_ENV,
    /** Address every server binds to. */
    host: env.HOST,
    ports: {
      gateway: env.GATEWAY_PORT,
      rest: env.REST_PORT,
      user: env.USER_SUBGRAPH_PORT,
      cards: env.CARDS_SUBGRAPH_PORT,
      payments: env.PAYMENTS_SUBGRAPH_PORT,
      compliance: env.COMPLIANCE_SUBGRAPH_PORT,
    },
    /** Where the gateway finds each subgraph. */
    subgraphUrls: {
      user: env.USER_SUBGRAPH_URL,
      cards: env.CARDS_SUBGRAPH_URL,
      payments: env.PAYMENTS_SUBGRAPH_URL,
      compliance: env.COMPLIANCE_SUBGRAPH_URL,
    },
    /** Where the REST adapter and the subgraphs find the gateway. */
    gatewayUrl: env.GATEWAY_URL,
    /** MongoDB to use; unset means the embedded FerretDB. */
    mongodbUri: env.MONGODB_URI,
    /** Prefix of every database name: `<prefix>user`, `<prefix>cards`, ... */
    dbPrefix: env.MONGODB_DB_PREFIX,
    /** Folder of the embedded FerretDB's SQLite files. */
    dataDir: env.DATA_DIR,
    /** FerretDB binary to use instead of the cached build. */
    ferretdbBin: env.FERRETDB_BIN,
    /** HMAC key that signs the principal the gateway forwards to subgraphs. */
    internalSecret: env.INTERNAL_SECRET,
    /** True when the secret was generated for this process (outside production only). */
    internalSecretGenerated: given.INTERNAL_SECRET === undefined,
    /** Redis for the event bus across processes; unset means the in-process bus (every service in one process). */
    redisUrl: env.REDIS_URL,
    /** How long the event log keeps events, and at most how many. */
    eventRetention: { seconds: env.EVENT_RETENTION_SECONDS, events: env.EVENT_RETENTION_EVENTS },
    /** Whether the gateway serves GraphiQL at /graphiql. */
    graphqlIde: env.GRAPHQL_IDE,
    /** Whether an unexpected error's own message and stack trace reach the client; otherwise they go to the log with the request id. */
    exposeErrorDetails: env.EXPOSE_ERROR_DETAILS,
    /** Delays before each attempt of a webhook or email delivery, in milliseconds (the first is usually 0). */
    webhookRetryScheduleMs: env.WEBHOOK_RETRY_SCHEDULE,
    /** Consecutive failed webhook attempts after which a merchant's endpoint is disabled. */
    webhookDisableAfter: env.WEBHOOK_DISABLE_AFTER,
    /** HMAC key of merchant and customer JWTs. */
    jwtSecret: env.JWT_SECRET,
    /** Where users reach the REST adapter (the specs' `{base_url}`): the request collection's base URL. */
    restPublicUrl: env.REST_PUBLIC_URL,
    /** The payment page a sent link's `url` points at (`?link=<link>` is appended). */
    paymentPageUrl: env.PAYMENT_PAGE_URL,
    paymentLinkLifetimeSeconds: env.PAYMENT_LINK_LIFETIME_SECONDS,
    tokenLifetimeSeconds: env.TOKEN_LIFETIME_SECONDS,
    /**
     * How long the gateway may answer a session token from its memory, without reading the
     * session, after a read found it live; 0 reads every time. Revocations and blocks arrive as
     * events on the bus and end it at once; the age bounds only changes made beside the services.
     */
    sessionCacheSeconds: env.SESSION_CACHE_SECONDS,
    /** Failed credential checks of one actor from one address group that lock that pair for `lockPeriodSeconds`. */
    loginMaxFailures: env.LOGIN_MAX_FAILURES,
    lockPeriodSeconds: env.LOCK_PERIOD_SECONDS,
    /**
     * Failed credential checks of one actor from all addresses together within
     * `loginAccountWindowSeconds` of the last one; past it, checks from an address the actor never
     * logged in from are refused with 429 TOO_MANY_ATTEMPTS (docs/security.md: Login lockout).
     */
    loginAccountMaxFailures: env.LOGIN_ACCOUNT_MAX_FAILURES,
    loginAccountWindowSeconds: env.LOGIN_ACCOUNT_WINDOW_SECONDS,
    /** How long an address group the actor logged in from stays known (passes the account-wide bound). */
    loginKnownSourceDays: env.LOGIN_KNOWN_SOURCE_DAYS,
    /** The `test` login channel. */
    testChannelEnabled: env.TEST_CHANNEL_ENABLED,
    logLevel: env.LOG_LEVEL,
    /** How long the gateway waits for a subgraph's answer to a read before its fields are UNAVAILABLE (writes are waited for). */
    subgraphTimeoutMs: env.SUBGRAPH_TIMEOUT_MS,
    /**
     * Which calls between services that `scripts/stack.ts` starts in one process go through its
     * in-process transport, without HTTP (`transportsOf`): `all` the REST adapter's to the gateway, the gateway's to
     * the subgraphs and the session route, and the subgraphs' to the graph; `adapter` only the
     * adapter's; `none` none, so that development runs the HTTP path production runs.
     */
    inProcessCalls: env.IN_PROCESS_CALLS,
    /** Largest accepted request body, in bytes: the REST adapter's, and the gateway's from the adapter and the subgraphs (uploads travel base64). */
    bodyLimitBytes: env.BODY_LIMIT_BYTES,
    httpLimits: {
      headersTimeoutMs: env.HTTP_HEADERS_TIMEOUT_MS,
      requestTimeoutMs: env.HTTP_REQUEST_TIMEOUT_MS,
      bodyIdleTimeoutMs: env.HTTP_BODY_IDLE_TIMEOUT_MS,
      bodyMinBytesPerSecond: env.HTTP_BODY_MIN_BYTES_PER_SECOND,
      maxConnections: env.HTTP_MAX_CONNECTIONS,
      maxConnectionsPerAddress: env.HTTP_MAX_CONNECTIONS_PER_ADDRESS,
    },
    /** Largest request body the gateway's `/graphql` reads from any other client, in bytes. */
    graphqlBodyLimitBytes: env.GRAPHQL_BODY_LIMIT_BYTES,
    /** Bounds of a GraphQL document's text at the gateway, checked before it is parsed (HTTP and subscriptions). */
    documentLimits: { maxBytes: env.GRAPHQL_MAX_DOCUMENT_BYTES, maxTokens: env.GRAPHQL_MAX_TOKENS },
    /**
     * Requests per window at the gateway: per root field (per credential, per client address, and
     * for the sensitive fields, counted once the operation is parsed), and whole requests per
     * credential and per address (counted before the document is parsed); how often a gateway
     * shares its counts.
     */
    rateLimits: {
      windowSeconds: env.RATE_LIMIT_WINDOW_SECONDS,
      perCredential: env.RATE_LIMIT_PER_CREDENTIAL,
      perAddress: env.RATE_LIMIT_PER_ADDRESS,
      sensitive: env.RATE_LIMIT_SENSITIVE,
      requestsPerCredential: env.RATE_LIMIT_REQUESTS_PER_CREDENTIAL,
      requestsPerAddress: env.RATE_LIMIT_REQUESTS_PER_ADDRESS,
      shareMs: env.RATE_LIMIT_SHARE_MS,
    },
    /**
     * Bounds of the gateway's graphql-ws subscriptions (each gateway counts its own): open
     * connections per principal and per client address (an IPv6 address by its /64), subscriptions
     * per principal across its connections, and subscribe messages per `RATE_LIMIT_WINDOW_SECONDS`
     * per connection and per principal (the latter counted with the rate limits: in Redis where
     * `REDIS_URL` is set).
     */
    subscriptionLimits: {
      connectionsPerPrincipal: env.WS_MAX_CONNECTIONS_PER_PRINCIPAL,
      connectionsPerAddress: env.WS_MAX_CONNECTIONS_PER_ADDRESS,
      subscriptionsPerPrincipal: env.WS_MAX_SUBSCRIPTIONS_PER_PRINCIPAL,
      subscribesPerConnection: env.WS_SUBSCRIBE_RATE_PER_CONNECTION,
      subscribesPerPrincipal: env.WS_SUBSCRIBE_RATE_PER_PRINCIPAL,
    },
    /** How long an Idempotency-Key and its answer are kept. */
    idempotencyKeyTtlSeconds: env.IDEMPOTENCY_KEY_TTL_SECONDS,
    /**
     * `require`: the gateway runs only registered operations (the REST adapter's, the dashboard's
     * and those of `trustedDocumentsFile`); `off`: any operation, and registered ones may be sent by
     * their hash alone.
     */
    trustedDocuments: env.TRUSTED_DOCUMENTS,
    /** An Apollo persisted-query manifest of further trusted documents (other clients' operations). */
    trustedDocumentsFile: env.TRUSTED_DOCUMENTS_FILE,
    /** Limits of one GraphQL operation at the gateway. */
    operationLimits: {
      maxDepth: env.GRAPHQL_MAX_DEPTH,
      maxAliases: env.GRAPHQL_MAX_ALIASES,
      maxRootFields: env.GRAPHQL_MAX_ROOT_FIELDS,
      maxCost: env.GRAPHQL_MAX_COST,
    },
    /** Lifetime of an aggregator's base token and of its confined token. */
    aggregatorTokenLifetimeSeconds: env.AGGREGATOR_TOKEN_LIFETIME_SECONDS,
    confinedTokenLifetimeSeconds: env.CONFINED_TOKEN_LIFETIME_SECONDS,
    /** Lifetime of the token a prospect gets from `POST /prospect/data`. */
    prospectTokenLifetimeSeconds: env.PROSPECT_TOKEN_LIFETIME_SECONDS,
    /** How far a device's proof time stamp may be from the server's clock. */
    deviceProofWindowSeconds: env.DEVICE_PROOF_WINDOW_SECONDS,
    /** Service keys' names, by the SHA-256 of the key. */
    serviceKeyHashes: env.SERVICE_KEYS ?? new Map<string, string>(),
    /**
     * What each service key may do, by its name (a key SERVICE_KEY_SCOPES does not name gets the
     * fields reserved for its name and nothing else). Null only outside production, for a key
     * named after one of the platform's own services: tests use such keys to act as that service.
     */
    serviceKeyScopes: scopesByKeyName(env.SERVICE_KEYS, env.SERVICE_KEY_SCOPES),
    /** SMTP server for emails (`smtp://user:pass@host:port`); unset writes them to `outboxDir`. */
    smtpUrl: env.SMTP_URL,
    mailFrom: env.MAIL_FROM,
    /** SMS provider webhook (POST `{to, text}`); unset writes texts to `outboxDir`. */
    smsWebhookUrl: env.SMS_WEBHOOK_URL,
    outboxDir: env.OUTBOX_DIR,
    /** True when OUTBOX_DIR was set explicitly: writing messages to files was chosen, not defaulted to. */
    outboxChosen: given.OUTBOX_DIR !== undefined,
    /** Who is told when someone tries to recover a hardened user. */
    operatorEmail: env.OPERATOR_EMAIL,
    /** Whether webhooks may target loopback or private addresses. */
    webhookAllowInternal: env.WEBHOOK_ALLOW_INTERNAL,
    /** How far below zero a card may take its account, in whole units of the account's currency (0: only what the account has). */
    cardOverdraftLimit: env.CARD_OVERDRAFT_LIMIT,
    /** How long an approved card authorization's hold lasts unless completed or reversed first. */
    cardHoldExpirySeconds: env.CARD_HOLD_EXPIRY_SECONDS,
    /** Build the offline geocoder's indexes right after start rather than on the first query. */
    geocoderPreload: env.GEOCODER_PRELOAD,
    /** Whether the demo data (with its published credentials) may be loaded. */
    seedDemo: env.SEED_DEMO,
    /** Whether a proxy in front of the REST adapter and the gateway sets `x-forwarded-for`. */
    trustProxy: env.TRUST_PROXY,
    /** Browser origins the gateway and the REST adapter answer (a host may end in `:*` for any port). */
    corsOrigins: env.CORS_ORIGINS,
    /** How long a service stays up after SIGTERM, answering but not ready, before it stops accepting. */
    drainSeconds: env.DRAIN_SECONDS,
    /** Where spans go over OTLP/HTTP; unset exports nothing. */
    otlpEndpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT,
    /** Share of traces recorded and exported, decided by trace id. */
    traceSampleRatio: env.OTEL_TRACES_SAMPLER_ARG,
    /** A port of its own for `GET /metrics` and the gateway's `GET /dependencies`; unset serves them on the service's own port. */
    metricsPort: env.METRICS_PORT,
  };
}

/** Each service key's scope by its name: SERVICE_KEY_SCOPES's, or its name's default; null for our own services' names. */
function scopesByKeyName(
  keys: ReadonlyMap<string, string> | undefined,
  scopes: ReadonlyMap<string, ServiceScope> | undefined,
): ReadonlyMap<string, ServiceScope | null> {
  const byName = new Map<string, ServiceScope | null>();
  for (const name of keys?.values() ?? [])
    byName.set(name, INTERNAL_SERVICE_NAMES.includes(name) ? null : (scopes?.get(name) ?? defaultServiceScope(name)));
  return byName;
}

const CONFIG = ENVIRONMENT.transform(toConfig);

/** Configuration of every service, read from the environment and validated once at start-up. */
export type Config = z.output<typeof CONFIG>;

/**
 * The limits every HTTP server puts on its clients, so that slow or numerous connections cannot
 * hold it: headers within `headersTimeoutMs`, a whole request within `requestTimeoutMs`, a body
 * that never pauses `bodyIdleTimeoutMs` and, once that long under way, averages
 * `bodyMinBytesPerSecond`; at most `maxConnections` connections, `maxConnectionsPerAddress` of them
 * from one client address (0: no cap by address).
 */
export type HttpLimits = Config['httpLimits'];

/** A configuration that cannot be used: each of `problems` names the variable (or file) at fault. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

/**
 * Reads and validates the configuration. Every problem is collected and reported at once, one
 * line per problem naming the variable, so a misconfigured service refuses to start with one
 * clear message. `overrides` replace settings after the checks (code's own values, for tests and
 * tools).
 */
export function loadConfig(env: Env = process.env, overrides: Partial<Config> = {}): Config {
  const parsed = CONFIG.safeParse(env, { error: typeIssueMessage(env) });
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => {
      // A variable, then where inside its value: SERVICE_KEY_SCOPES.statements.users (list positions left out).
      const where = issue.path.filter((part) => typeof part === 'string').join('.');
      return `${where} ${issue.message}`;
    });
    throw new ConfigError([...new Set(lines)]);
  }
  return Object.freeze({ ...parsed.data, ...overrides });
}

/** Folder for per-user caches such as the FerretDB build, shared by every clone. */
export function userCacheDir(env: Env = process.env): string {
  return path.join(env.XDG_CACHE_HOME || path.join(homedir(), '.cache'), 'banking-graph');
}
