import { createHash, createHmac, randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import type { ServiceScope } from '../contracts/principal.js';
import { parseServiceKeyScopes } from '../security/service-scope.js';

// Every environment variable the configuration reads, each defined once in SETTINGS: its type and
// bounds (a zod schema, described in words), its default, its meaning and its section. The Config
// type (config.ts), the checks, the error lines, the table in docs/operations.md and .env.example
// (`npm run config-docs`) all come from it.

/** The repository root, found from this module's own location. */
export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Where production serves `/metrics` and `/dependencies` when METRICS_PORT is unset: never on the public port. */
export const DEFAULT_PRODUCTION_METRICS_PORT = 9464;

/** The names our own services sign their internal calls with, which no outside key may take in production. */
export const INTERNAL_SERVICE_NAMES: readonly string[] = ['user', 'cards', 'payments', 'compliance', 'gateway', 'provision'];

const NODE_ENVS = ['development', 'production', 'test'] as const;
const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;

/** How much a service logs (LOG_LEVEL). */
export type LogLevel = (typeof LOG_LEVELS)[number];

/** The sections of the documentation's table, in their order. */
export const SECTIONS = {
  network: 'process, network',
  data: 'data, events',
  secrets: 'secrets, sessions',
  gateway: 'gateway protection',
  messages: 'messages, webhooks, links',
} as const;

// ---- What a variable may hold. Each type parses the text of the environment; its description
// says what it accepts, in words that follow "must be" (the error lines and the docs use it). ----

const int = (min: number, max: number) => z.coerce.number<string>().int().min(min).max(max).describe(`an integer from ${min} to ${max}`);
const port = int(0, 65535);
const text = (description: string) => z.string().describe(description);
const oneOf = <const T extends readonly [string, ...string[]]>(values: T) => z.enum(values).describe(`one of ${values.join(', ')}`);
const bool = z
  .enum(['true', '1', 'yes', 'false', '0', 'no'])
  .transform((value) => value === 'true' || value === '1' || value === 'yes')
  .describe('true or false');
const ratio = z.coerce.number<string>().min(0).max(1).describe('a number from 0 to 1');
const url = z
  .string()
  .refine((value) => URL.canParse(value))
  .describe('a URL');
const httpUrl = z
  .string()
  .refine((value) => ['http:', 'https:'].includes(URL.parse(value)?.protocol ?? ''))
  .describe('an http(s) URL');
// Secrets are never quoted back: their message has no "(got ...)".
const secret = z.string().min(32, { error: 'must be at least 32 characters long' }).describe('at least 32 characters');

const DURATION = /^\s*(\d+)\s*(ms|s|m|h)?\s*$/;
const UNIT_MS = new Map([
  ['ms', 1],
  ['s', 1000],
  ['m', 60_000],
  ['h', 3_600_000],
]);
const durations = z
  .string()
  .transform((raw) => raw.split(','))
  .pipe(
    z
      .array(
        z
          .string()
          .regex(DURATION)
          .transform((part) => {
            const [, amount, unit] = DURATION.exec(part)!;
            return Number(amount) * (UNIT_MS.get(unit ?? 'ms') ?? 1);
          })
          .pipe(z.number().max(7 * 24 * 3_600_000)),
      )
      .max(50),
  )
  .describe('a comma-separated list of up to 50 durations of at most 7 days, such as 0,5s,5m,2h');

const ORIGIN = /^https?:\/\/[A-Za-z0-9.-]+(:(\d{1,5}|\*))?$/;
const origins = z
  .string()
  // Browsers send origins in lower case.
  .transform((raw) =>
    raw
      .split(',')
      .map((origin) => origin.trim().toLowerCase())
      .filter(Boolean),
  )
  .pipe(
    z.array(
      z.string().regex(ORIGIN, {
        error: (issue) => `must list origins such as https://app.example.com or http://localhost:* (got "${String(issue.input)}")`,
      }),
    ),
  )
  .readonly()
  .describe('comma-separated origins: scheme, host and port, or a host with :* for any port');

const SERVICE_KEY = /^[A-Za-z0-9_-]{1,40}=[\s\S]{32,}$/;
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
/** Service keys' names by the SHA-256 of the key. */
const serviceKeys = z
  .string()
  .transform((raw) =>
    raw
      .split(',')
      .map((entry) => entry.trim())
      .filter(Boolean),
  )
  .pipe(z.array(z.string().regex(SERVICE_KEY, { error: 'must be a comma-separated list of name=key, each key at least 32 characters' })))
  .transform(
    (entries): ReadonlyMap<string, string> =>
      new Map(
        entries.map((entry) => {
          const cut = entry.indexOf('=');
          return [sha256(entry.slice(cut + 1)), entry.slice(0, cut)];
        }),
      ),
  )
  .describe('name=key pairs, comma-separated, each key at least 32 characters');

/** What each key name may do; its problems become issues at their place in the JSON. */
const serviceKeyScopes = z
  .string()
  .transform((raw, ctx): ReadonlyMap<string, ServiceScope> => {
    if (raw.trim() === '') return new Map();
    const { scopes, problems } = parseServiceKeyScopes(raw);
    for (const problem of problems) ctx.issues.push({ code: 'custom', path: problem.path, message: problem.message, input: raw });
    return scopes;
  })
  .describe('a JSON object from key names to scopes');

// ---- The table. ----

/** A default as the environment would give it: text, or a number or flag written out. */
type Input = string | number | boolean;

/** A default computed from other variables' values (`get`), with `doc` saying what it is, for the docs. */
interface Derived<R extends Input | undefined = Input | undefined> {
  readonly doc: string;
  readonly value: (get: Get) => R;
}

/** No default: unset, the variable is undefined; `unset` says what that means, for the docs. */
interface Unset {
  readonly unset: string;
}

/** One environment variable: how it is parsed, its default, and what the docs say of it. */
export interface Setting {
  readonly section: keyof typeof SECTIONS;
  /** Parses a value that is set, and a default. Its description says what it accepts. */
  readonly type: z.ZodType<unknown, string>;
  readonly default: Input | Derived | Unset;
  /** What it is for, in one line of markdown. */
  readonly meaning: string;
  /** For `.env.example`: a value to show where the default is not one to write down. */
  readonly example?: string;
  /** An empty value is a value (an empty list, no prefix), not unset. */
  readonly keepsEmpty?: true;
}

/**
 * A derived default. Its function states its return type: the table's type is inferred from the
 * table itself, which a return type inferred from `get` would make circular.
 */
function derived<R extends Input | undefined>(doc: string, value: (get: Get) => R): Derived<R> {
  return { doc, value };
}

const none = (unset = 'none'): Unset => ({ unset });

/** The settings of one section: `network(type, default, meaning)` is one of process, network. */
function section<S extends keyof typeof SECTIONS>(key: S) {
  return <T extends Setting['type'], D extends Setting['default']>(
    type: T,
    fallback: D,
    meaning: string,
    more?: Pick<Setting, 'example' | 'keepsEmpty'>,
  ) => ({ section: key, type, default: fallback, meaning, ...more });
}
const network = section('network');
const data = section('data');
const secrets = section('secrets');
const gateway = section('gateway');
const messages = section('messages');

const onOutsideProduction = derived('on outside production', (get): boolean => get('NODE_ENV') !== 'production');
const subgraphUrl = (name: 'user' | 'cards' | 'payments' | 'compliance') => {
  const port = `${name.toUpperCase() as Uppercase<typeof name>}_SUBGRAPH_PORT` as const;
  return network(
    httpUrl,
    derived(`\`http://127.0.0.1:<${port}>/graphql\``, (get): string => `http://127.0.0.1:${get(port)}/graphql`),
    `where the gateway finds the ${name} subgraph`,
  );
};

/** Every variable the configuration reads. Their order is the docs' within a section. */
export const SETTINGS = {
  // An empty NODE_ENV is refused, not taken for development.
  NODE_ENV: network(
    oneOf(NODE_ENVS),
    'development',
    'the mode: `production` requires `INTERNAL_SECRET`, refuses `EXPOSE_ERROR_DETAILS` and changes the defaults that say so',
    { keepsEmpty: true },
  ),
  HOST: network(text('an address'), '127.0.0.1', 'address every server binds to (`0.0.0.0` in containers)'),
  GATEWAY_PORT: network(port, 4000, "the gateway's port (0: any free port)"),
  REST_PORT: network(port, 8080, "the REST adapter's port (0: any free port)"),
  USER_SUBGRAPH_PORT: network(port, 4001, "the user subgraph's port (0: any free port)"),
  CARDS_SUBGRAPH_PORT: network(port, 4002, "the cards subgraph's port (0: any free port)"),
  PAYMENTS_SUBGRAPH_PORT: network(port, 4003, "the payments subgraph's port (0: any free port)"),
  COMPLIANCE_SUBGRAPH_PORT: network(port, 4004, "the compliance subgraph's port (0: any free port)"),
  USER_SUBGRAPH_URL: subgraphUrl('user'),
  CARDS_SUBGRAPH_URL: subgraphUrl('cards'),
  PAYMENTS_SUBGRAPH_URL: subgraphUrl('payments'),
  COMPLIANCE_SUBGRAPH_URL: subgraphUrl('compliance'),
  GATEWAY_URL: network(
    httpUrl,
    derived('`http://127.0.0.1:<GATEWAY_PORT>/graphql`', (get): string => `http://127.0.0.1:${get('GATEWAY_PORT')}/graphql`),
    'where the adapter and every subgraph find the gateway (graph calls, event forwarding)',
  ),
  REST_PUBLIC_URL: network(
    httpUrl,
    derived('`http://localhost:<REST_PORT>`', (get): string => `http://localhost:${get('REST_PORT')}`),
    "where users reach the REST adapter (the specs' `{base_url}`): OpenAPI, the Postman collection",
    { example: 'https://api.bank.example' },
  ),
  TRUST_PROXY: network(bool, false, 'client address from `x-forwarded-for`, set by a proxy in front of the gateway and the adapter'),
  // Set empty, it answers no browser origin.
  CORS_ORIGINS: network(
    origins,
    derived('none in production; `http://localhost:*,http://127.0.0.1:*` otherwise', (get): string =>
      get('NODE_ENV') === 'production' ? '' : 'http://localhost:*,http://127.0.0.1:*',
    ),
    'browser origins the gateway and adapter answer',
    { example: 'https://app.example.com,http://localhost:*', keepsEmpty: true },
  ),
  DRAIN_SECONDS: network(int(0, 300), 5, 'how long a service answers, not ready, after SIGTERM before it closes'),
  // A 5 MiB upload travels base64 in JSON from the adapter to the subgraph: 8 MiB leaves room.
  BODY_LIMIT_BYTES: network(
    int(1024, 50 * 1024 * 1024),
    8 * 1024 * 1024,
    "largest request body (the REST adapter's; the gateway's from the adapter and the subgraphs, which sign their calls)",
  ),
  // Apollo Router's default: an ad hoc client has no business sending more; uploads go through the REST routes.
  GRAPHQL_BODY_LIMIT_BYTES: network(
    int(1024, 50 * 1024 * 1024),
    2 * 1024 * 1024,
    "largest body the gateway's `/graphql` reads from any other client (413 `PAYLOAD_TOO_LARGE`, before reading it)",
  ),
  HTTP_HEADERS_TIMEOUT_MS: network(int(500, 300_000), 20_000, 'time a client has to send its request headers (checked every second)'),
  HTTP_REQUEST_TIMEOUT_MS: network(
    int(1000, 3_600_000),
    300_000,
    'time a client has to send its whole request; longer than the header timeout',
  ),
  HTTP_BODY_IDLE_TIMEOUT_MS: network(int(100, 300_000), 10_000, 'a request body that pauses this long is dropped'),
  HTTP_BODY_MIN_BYTES_PER_SECOND: network(
    int(0, 100 * 1024 * 1024),
    1024,
    'a body that has averaged less once `HTTP_BODY_IDLE_TIMEOUT_MS` under way is dropped (0: no minimum)',
  ),
  HTTP_MAX_CONNECTIONS: network(int(1, 1_000_000), 10_000, 'connections one server holds; the rest are refused'),
  // Behind a proxy every connection comes from the proxy's address.
  HTTP_MAX_CONNECTIONS_PER_ADDRESS: network(
    int(0, 1_000_000),
    derived('256; 0 with `TRUST_PROXY=true`', (get): number => (get('TRUST_PROXY') ? 0 : 256)),
    'connections the gateway and the REST adapter hold from one peer address (0: no cap); subgraphs have none',
  ),
  SUBGRAPH_TIMEOUT_MS: network(
    int(100, 600_000),
    30_000,
    "the gateway's wait on a subgraph's answer to a read before its fields are UNAVAILABLE (writes are waited for)",
  ),
  IN_PROCESS_CALLS: network(
    oneOf(['none', 'adapter', 'all']),
    'none',
    'calls between services of one process made in it, without HTTP ([rest-contract.md](rest-contract.md))',
  ),
  LOG_LEVEL: network(
    oneOf(LOG_LEVELS),
    derived('`info` (`warn` in test)', (get): LogLevel => (get('NODE_ENV') === 'test' ? 'warn' : 'info')),
    'the least severe log lines written',
  ),
  OTEL_EXPORTER_OTLP_ENDPOINT: network(url, none('none: nothing exported'), 'OTLP/HTTP collector base URL (`/v1/traces` is appended)', {
    example: 'http://localhost:4318',
  }),
  OTEL_TRACES_SAMPLER_ARG: network(
    ratio,
    1,
    "share of traces recorded and exported, decided by trace id (a caller's sampled flag is not obeyed)",
  ),
  METRICS_PORT: network(
    int(1, 65535),
    derived(`${DEFAULT_PRODUCTION_METRICS_PORT} in production; none otherwise`, (get): number | undefined =>
      get('NODE_ENV') === 'production' ? DEFAULT_PRODUCTION_METRICS_PORT : undefined,
    ),
    "a port of its own for `GET /metrics` and the gateway's `GET /dependencies` (none, outside production only: on each service's port)",
    { example: String(DEFAULT_PRODUCTION_METRICS_PORT) },
  ),

  MONGODB_URI: data(text('a MongoDB connection string'), none('embedded FerretDB'), 'the database', {
    example: 'mongodb://127.0.0.1:27017/?replicaSet=rs0',
  }),
  // Empty is no prefix.
  MONGODB_DB_PREFIX: data(
    z
      .string()
      .regex(/^[A-Za-z0-9_-]{0,32}$/)
      .describe('up to 32 letters, digits, _ or -'),
    'banking_',
    'prefix of every database name and the Redis namespace',
    { keepsEmpty: true },
  ),
  DATA_DIR: data(
    text('a folder'),
    derived('`<root>/.data/ferretdb`', (): string => path.join(REPO_ROOT, '.data', 'ferretdb')),
    "the embedded FerretDB's SQLite files",
  ),
  FERRETDB_BIN: data(text('a file'), none('cached build'), 'a FerretDB binary to run instead of the build cached under `XDG_CACHE_HOME`', {
    example: '/path/to/ferretdb',
  }),
  REDIS_URL: data(url, none('in-process'), 'bus, rate limits, idempotency; required when services run as separate processes', {
    example: 'redis://127.0.0.1:6379',
  }),
  EVENT_RETENTION_SECONDS: data(
    int(1, 30 * 86_400),
    3600,
    'how long the event log keeps events; a reader away longer finds them gone ([realtime.md](realtime.md))',
  ),
  EVENT_RETENTION_EVENTS: data(int(100, 10_000_000), 100_000, 'at most how many events the event log keeps'),
  SEED_DEMO: data(bool, onOutsideProduction, 'allow the demo data (published credentials)'),

  // Production requires it (ENVIRONMENT's checks).
  INTERNAL_SECRET: secrets(
    secret,
    derived('random per process outside production; required in production', (): string => randomBytes(32).toString('hex')),
    'signs the principal the gateway forwards to the subgraphs; shared by every service (`openssl rand -hex 32`)',
  ),
  JWT_SECRET: secrets(
    secret,
    derived('derived from `INTERNAL_SECRET`', (get): string =>
      createHmac('sha256', get('INTERNAL_SECRET')).update('payment-link-jwt').digest('hex'),
    ),
    'merchant/customer JWTs; gateway and payments must agree',
  ),
  SERVICE_KEYS: secrets(
    serviceKeys,
    none(),
    "`name=key,…` (header `x-service-key`): `operator`, `card-processor`, service channels; in production no key may take a name of the services' own (`user`, `cards`, `payments`, `compliance`, `gateway`, `provision`)",
    { example: 'statements=change-me-to-a-long-random-key-0000' },
  ),
  SERVICE_KEY_SCOPES: secrets(
    serviceKeyScopes,
    none(),
    'JSON, per key name: `{"channels": [...], "users": [...] or "*", "fields": [...]}`, what the key may do ([security.md](security.md#service-keys)); a key it does not name gets only its name\'s documented fields (`operator`, `card-processor`, `ach-processor`), any other nothing; gateway only',
    { example: '{"statements":{"channels":["statementGenerator"],"users":["demo_user_1"]}}' },
  ),
  TOKEN_LIFETIME_SECONDS: secrets(int(60, 30 * 24 * 3600), 3600, 'end-user tokens'),
  AGGREGATOR_TOKEN_LIFETIME_SECONDS: secrets(int(60, 7 * 24 * 3600), 3600, "an aggregator's base token"),
  CONFINED_TOKEN_LIFETIME_SECONDS: secrets(int(60, 24 * 3600), 900, "an aggregator's confined token"),
  PROSPECT_TOKEN_LIFETIME_SECONDS: secrets(int(60, 7 * 24 * 3600), 3600, 'the onboarding token of `POST /prospect/data`'),
  SESSION_CACHE_SECONDS: secrets(
    int(0, 300),
    30,
    'how long the gateway answers a session it found live from memory (0: reads every time); logouts, revocations and blocks end it at once through the bus',
  ),
  LOGIN_MAX_FAILURES: secrets(int(1, 100), 5, 'failed credential checks that lock one actor out from one address group'),
  LOCK_PERIOD_SECONDS: secrets(int(1, 7 * 24 * 3600), 900, 'how long that lockout lasts'),
  LOGIN_ACCOUNT_MAX_FAILURES: secrets(int(1, 10_000), 20, "an actor's failures from all addresses before unknown addresses get 429"),
  LOGIN_ACCOUNT_WINDOW_SECONDS: secrets(int(1, 30 * 24 * 3600), 3600, 'how long those failures count after the last one'),
  LOGIN_KNOWN_SOURCE_DAYS: secrets(int(1, 3650), 90, 'how long an address group an actor logged in from passes that bound'),
  DEVICE_PROOF_WINDOW_SECONDS: secrets(int(5, 3600), 300, "how far a device's proof time stamp may be from the server's clock"),
  TEST_CHANNEL_ENABLED: secrets(bool, onOutsideProduction, 'the `test` login channel'),

  GRAPHQL_MAX_DEPTH: gateway(int(2, 100), 10, "an operation's depth"),
  GRAPHQL_MAX_ALIASES: gateway(int(0, 1000), 15, "an operation's aliases"),
  GRAPHQL_MAX_ROOT_FIELDS: gateway(int(1, 1000), 10, "an operation's root fields"),
  GRAPHQL_MAX_COST: gateway(int(10, 10_000_000), 50_000, "an operation's cost"),
  GRAPHQL_MAX_DOCUMENT_BYTES: gateway(
    int(1024, 8 * 1024 * 1024),
    64 * 1024,
    "a document's text in bytes, before it is parsed (HTTP and subscriptions)",
  ),
  GRAPHQL_MAX_TOKENS: gateway(int(100, 1_000_000), 5000, "a document's tokens, before it is parsed"),
  RATE_LIMIT_WINDOW_SECONDS: gateway(int(1, 3600), 60, "the rate limits' window"),
  RATE_LIMIT_PER_CREDENTIAL: gateway(int(1, 10_000_000), 600, 'requests per window and root field of one credential'),
  RATE_LIMIT_PER_ADDRESS: gateway(int(1, 10_000_000), 1200, 'requests per window and root field from one client address'),
  RATE_LIMIT_SENSITIVE: gateway(
    int(1, 10_000_000),
    20,
    'requests per window of a sensitive root field, counted once the operation is parsed',
  ),
  RATE_LIMIT_SHARE_MS: gateway(
    int(0, 1000),
    20,
    'how often a gateway adds the rate-limit counts it made in memory to Redis, in one round trip (0: every count in Redis as it comes); a key new or idle here, past half of its limit, or a sensitive field is counted in Redis as each hit comes',
  ),
  RATE_LIMIT_REQUESTS_PER_CREDENTIAL: gateway(int(1, 10_000_000), 1200, 'whole requests per window of one credential, before parsing'),
  RATE_LIMIT_REQUESTS_PER_ADDRESS: gateway(int(1, 10_000_000), 2400, 'whole requests per window from one client address, before parsing'),
  WS_MAX_CONNECTIONS_PER_PRINCIPAL: gateway(int(1, 100_000), 10, 'open graphql-ws connections of one principal per gateway (4429 beyond)'),
  WS_MAX_CONNECTIONS_PER_ADDRESS: gateway(
    int(1, 1_000_000),
    100,
    'open graphql-ws connections from one client address (an IPv6 /64) per gateway (4429 beyond)',
  ),
  WS_MAX_SUBSCRIPTIONS_PER_PRINCIPAL: gateway(int(1, 1_000_000), 50, 'subscriptions per principal per gateway, across its connections'),
  WS_SUBSCRIBE_RATE_PER_CONNECTION: gateway(int(1, 1_000_000), 60, 'subscribe messages per rate-limit window and connection'),
  WS_SUBSCRIBE_RATE_PER_PRINCIPAL: gateway(
    int(1, 10_000_000),
    240,
    'subscribe messages per rate-limit window and principal (counted in Redis where `REDIS_URL` is set)',
  ),
  IDEMPOTENCY_KEY_TTL_SECONDS: gateway(int(60, 30 * 24 * 3600), 24 * 3600, 'how long an Idempotency-Key and its answer are kept'),
  TRUSTED_DOCUMENTS: gateway(
    oneOf(['off', 'require']),
    'off',
    "`require`: registered operations only (the REST adapter's, the dashboard's, `TRUSTED_DOCUMENTS_FILE`'s)",
  ),
  TRUSTED_DOCUMENTS_FILE: gateway(
    text('a file'),
    none(),
    "an Apollo persisted-query manifest of further trusted documents (other clients' operations)",
    { example: '/etc/banking-graph/partner-operations.json' },
  ),
  GRAPHQL_IDE: gateway(bool, onOutsideProduction, '`/graphiql` (`/dashboard` is always served)'),
  EXPOSE_ERROR_DETAILS: gateway(
    bool,
    false,
    "an unexpected error's message and stack trace in answers, for a developer at work; refused in production",
  ),

  SMTP_URL: messages(url, none('none: emails go to `OUTBOX_DIR`'), 'SMTP server for emails', {
    example: 'smtp://user:pass@smtp.example.com:587',
  }),
  MAIL_FROM: messages(text('a sender'), 'Banking graph <no-reply@banking-graph.local>', 'sender of every email'),
  SMS_WEBHOOK_URL: messages(url, none('none: texts go to `OUTBOX_DIR`'), "SMS provider's webhook (POST `{to, text}`)", {
    example: 'https://sms.example.com/send',
  }),
  OUTBOX_DIR: messages(
    text('a folder'),
    derived('`<root>/.data/outbox`', (): string => path.join(REPO_ROOT, '.data', 'outbox')),
    'where emails and texts are written as files when SMTP/SMS are unset',
  ),
  OPERATOR_EMAIL: messages(text('an email address'), 'operator@banking-graph.local', 'told of hardened-user recovery attempts'),
  WEBHOOK_RETRY_SCHEDULE: messages(durations, '0,5s,5m,30m,2h,5h,10h,10h', 'delay before each attempt of a webhook or email delivery'),
  WEBHOOK_DISABLE_AFTER: messages(int(1, 1000), 20, "failures in a row that disable a merchant's endpoint"),
  WEBHOOK_ALLOW_INTERNAL: messages(bool, onOutsideProduction, 'private/plain-http webhook targets (card and merchant)'),
  PAYMENT_PAGE_URL: messages(
    httpUrl,
    derived('`<REST_PUBLIC_URL>/pay`', (get): string => `${get('REST_PUBLIC_URL').replace(/\/$/, '')}/pay`),
    "the payment page a sent link's `url` points at (`?link=<link>` is appended)",
    { example: 'https://pay.example.com/pay' },
  ),
  PAYMENT_LINK_LIFETIME_SECONDS: messages(
    int(60, 90 * 24 * 3600),
    7 * 24 * 3600,
    'how long a sent payment link stays payable before it becomes Expired',
  ),
  CARD_OVERDRAFT_LIMIT: messages(int(0, 1_000_000_000), 0, "whole units of an account's currency a card may take it below zero (payments)"),
  CARD_HOLD_EXPIRY_SECONDS: messages(
    int(1, 30 * 24 * 3600),
    7 * 24 * 3600,
    "how long an approved authorization's hold lasts unless completed or reversed (payments; an unposted purchase's lasts 30 days)",
  ),
  GEOCODER_PRELOAD: messages(bool, true, "build the geocoder's indexes at start (1-2 s, ~50 MB) rather than on the first query (user)"),
} satisfies Record<string, Setting>;

type Settings = typeof SETTINGS;

/** The name of an environment variable the configuration reads. */
export type Name = keyof Settings;

type Parsed<K extends Name> = z.output<Settings[K]['type']>;

/** The variables as the environment gives them, parsed: a variable without a fixed default may be undefined. */
type Given = { [K in Name]: Settings[K]['default'] extends Input ? Parsed<K> : Parsed<K> | undefined };

/** The variables' values once every default is applied. */
type Values = {
  [K in Name]: Settings[K]['default'] extends Input
    ? Parsed<K>
    : Settings[K]['default'] extends Derived<infer R>
      ? undefined extends R
        ? Parsed<K> | undefined
        : Parsed<K>
      : Parsed<K> | undefined;
};

/** Reads another variable's value, for a derived default. */
interface Get {
  <K extends Name>(name: K): Values[K];
}

// The table seen as its common shape, for the code that walks every entry.
const TABLE: Readonly<Record<Name, Setting>> = SETTINGS;
/** Every variable's name, in the table's order. */
export const NAMES = Object.keys(SETTINGS) as Name[];

/** A variable's setting, or undefined for any other name. */
function settingOf(name: unknown): Setting | undefined {
  const known = NAMES.find((each) => each === name);
  return known && TABLE[known];
}

/** True when a default is derived rather than fixed. */
export function isDerived(value: Setting['default']): value is Derived {
  return typeof value === 'object' && 'value' in value;
}

// ---- Reading the environment. ----

/** A variable's schema within the environment: empty is unset (unless it keepsEmpty), then its type, or its fixed default. */
function field(setting: Setting): z.ZodType {
  const fallback = setting.default;
  return z.preprocess(
    (raw) => (raw === '' && !setting.keepsEmpty ? undefined : raw),
    typeof fallback === 'object' ? setting.type.optional() : setting.type.prefault(String(fallback)),
  );
}

const FIELDS = Object.fromEntries(NAMES.map((name) => [name, field(TABLE[name])])) as { [K in Name]: z.ZodType<Given[K]> };
const GIVEN = z.object(FIELDS);

/**
 * A check across variables. It runs when the variables it reads parsed, whatever became of the
 * others, so that one error lists every problem; `problem` adds one to a variable.
 */
function across(reads: Name[], check: (given: z.output<typeof GIVEN>, problem: (name: Name, message: string) => void) => void) {
  return z.superRefine<z.output<typeof GIVEN>>(
    (given, ctx) => check(given, (name, message) => ctx.addIssue({ code: 'custom', path: [name], message })),
    { when: (payload) => !payload.issues.some((issue) => reads.some((name) => name === issue.path?.[0])) },
  );
}

/**
 * The environment, read: each variable parsed (its fixed default where unset), the checks that
 * span variables, then the derived defaults. Every issue's path starts with the variable's name.
 * Gives `values` and, for what depends on whether a variable was set at all, `given`.
 */
export const ENVIRONMENT = GIVEN.check(
  across(['NODE_ENV', 'INTERNAL_SECRET'], (given, problem) => {
    if (given.NODE_ENV === 'production' && given.INTERNAL_SECRET === undefined)
      problem('INTERNAL_SECRET', 'is required in production (at least 32 characters; e.g. `openssl rand -hex 32`)');
  }),
  across(['NODE_ENV', 'EXPOSE_ERROR_DETAILS'], (given, problem) => {
    if (given.NODE_ENV === 'production' && given.EXPOSE_ERROR_DETAILS)
      problem('EXPOSE_ERROR_DETAILS', 'is for a developer at work, never in production (it puts internal details in answers)');
  }),
  across(['NODE_ENV', 'SERVICE_KEYS'], (given, problem) => {
    // A key named after one of our own services would act as that service (append audit records,
    // post card transactions): production refuses it; tests use such keys to call internal mutations.
    if (given.NODE_ENV !== 'production') return;
    for (const name of new Set(given.SERVICE_KEYS?.values()))
      if (INTERNAL_SERVICE_NAMES.includes(name))
        problem(
          'SERVICE_KEYS',
          `must not name a key ${name}: that name is one of the services' own (${INTERNAL_SERVICE_NAMES.join(', ')})`,
        );
  }),
  across(['SERVICE_KEYS', 'SERVICE_KEY_SCOPES'], (given, problem) => {
    const keyNames = new Set(given.SERVICE_KEYS?.values());
    for (const name of given.SERVICE_KEY_SCOPES?.keys() ?? [])
      if (!keyNames.has(name)) problem('SERVICE_KEY_SCOPES', `names ${name}, which SERVICE_KEYS does not name`);
      else if (INTERNAL_SERVICE_NAMES.includes(name))
        problem('SERVICE_KEY_SCOPES', `must not scope ${name}: that name is one of the services' own`);
  }),
  across(['HTTP_HEADERS_TIMEOUT_MS', 'HTTP_REQUEST_TIMEOUT_MS'], (given, problem) => {
    if (given.HTTP_HEADERS_TIMEOUT_MS >= given.HTTP_REQUEST_TIMEOUT_MS)
      problem('HTTP_HEADERS_TIMEOUT_MS', 'must be shorter than HTTP_REQUEST_TIMEOUT_MS');
  }),
).transform((given, ctx) => {
  // Each value once: a derived default may read another (PAYMENT_PAGE_URL reads REST_PUBLIC_URL,
  // which reads REST_PORT), and a random one must be the same for every reader.
  const values = new Map<Name, unknown>();
  const resolve = (name: Name): unknown => {
    const fallback = TABLE[name].default;
    if (given[name] !== undefined || !isDerived(fallback)) return given[name];
    const input = fallback.value(get);
    if (input === undefined) return undefined;
    const parsed = TABLE[name].type.safeParse(String(input));
    if (parsed.success) return parsed.data;
    ctx.issues.push({ code: 'custom', path: [name], message: `has a default that does not parse ("${String(input)}")`, input });
    return undefined;
  };
  const get: Get = (name) => {
    if (!values.has(name)) values.set(name, resolve(name));
    // The value came from this variable's own type (or its default through it).
    return values.get(name) as Values[typeof name];
  };
  return { values: Object.fromEntries(NAMES.map((name) => [name, get(name)])) as Values, given };
});

/**
 * The message of an issue zod raised on a variable's own type: what the variable must be, and
 * what it was. Issues with a message of their own (the checks, secrets, origins) keep it.
 */
export function typeIssueMessage(env: Readonly<Record<string, string | undefined>>) {
  return (issue: z.core.$ZodRawIssue): string | undefined => {
    const name = issue.path?.[0];
    const setting = settingOf(name);
    if (!setting || typeof name !== 'string') return undefined;
    return `must be ${setting.type.description ?? 'valid'} (got "${withoutCredentials(env[name] ?? '')}")`;
  };
}

/** A value quoted back with any `user:password@` of a URL in it masked: a connection string's password stays out of the log. */
const withoutCredentials = (value: string) => value.replace(/\/\/[^/@]*@/g, '//***@');
