import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_PRODUCTION_METRICS_PORT, loadConfig, REPO_ROOT } from '../../platform/runtime/config.js';
import { NAMES } from '../../platform/runtime/config-schema.js';
import { ENV_EXAMPLE, envExample, OPERATIONS_DOC, withConfigTable } from '../../scripts/lib/config-docs.js';

type Env = Record<string, string | undefined>;

const SECRET = 's'.repeat(40);
const PRODUCTION = { NODE_ENV: 'production', INTERNAL_SECRET: SECRET };

/** The lines of the one error `env` is refused with; none when it loads. */
function problemsOf(env: Env): string[] {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

describe('the configuration', () => {
  it('has the same defaults as before the schema, by mode', () => {
    const development = loadConfig({});
    expect(development).toMatchObject({
      nodeEnv: 'development',
      host: '127.0.0.1',
      ports: { gateway: 4000, rest: 8080, user: 4001, cards: 4002, payments: 4003, compliance: 4004 },
      subgraphUrls: {
        user: 'http://127.0.0.1:4001/graphql',
        cards: 'http://127.0.0.1:4002/graphql',
        payments: 'http://127.0.0.1:4003/graphql',
        compliance: 'http://127.0.0.1:4004/graphql',
      },
      gatewayUrl: 'http://127.0.0.1:4000/graphql',
      restPublicUrl: 'http://localhost:8080',
      paymentPageUrl: 'http://localhost:8080/pay',
      mongodbUri: undefined,
      dbPrefix: 'banking_',
      dataDir: path.join(REPO_ROOT, '.data', 'ferretdb'),
      outboxDir: path.join(REPO_ROOT, '.data', 'outbox'),
      outboxChosen: false,
      internalSecretGenerated: true,
      logLevel: 'info',
      corsOrigins: ['http://localhost:*', 'http://127.0.0.1:*'],
      metricsPort: undefined,
      graphqlIde: true,
      testChannelEnabled: true,
      seedDemo: true,
      webhookAllowInternal: true,
      exposeErrorDetails: false,
      trustProxy: false,
      inProcessCalls: 'none',
      trustedDocuments: 'off',
      webhookRetryScheduleMs: [0, 5000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000],
      eventRetention: { seconds: 3600, events: 100_000 },
      httpLimits: {
        headersTimeoutMs: 20_000,
        requestTimeoutMs: 300_000,
        bodyIdleTimeoutMs: 10_000,
        bodyMinBytesPerSecond: 1024,
        maxConnections: 10_000,
        maxConnectionsPerAddress: 256,
      },
      operationLimits: { maxDepth: 10, maxAliases: 15, maxRootFields: 10, maxCost: 50_000 },
      documentLimits: { maxBytes: 65_536, maxTokens: 5000 },
      rateLimits: {
        windowSeconds: 60,
        perCredential: 600,
        perAddress: 1200,
        sensitive: 20,
        requestsPerCredential: 1200,
        requestsPerAddress: 2400,
      },
      subscriptionLimits: {
        connectionsPerPrincipal: 10,
        connectionsPerAddress: 100,
        subscriptionsPerPrincipal: 50,
        subscribesPerConnection: 60,
        subscribesPerPrincipal: 240,
      },
      bodyLimitBytes: 8 * 1024 * 1024,
      graphqlBodyLimitBytes: 2 * 1024 * 1024,
      traceSampleRatio: 1,
      cardHoldExpirySeconds: 604_800,
      paymentLinkLifetimeSeconds: 604_800,
      idempotencyKeyTtlSeconds: 86_400,
      geocoderPreload: true,
    });
    expect(development.internalSecret).toMatch(/^[0-9a-f]{64}$/);
    expect(development.serviceKeyHashes.size).toBe(0);
    expect(development.serviceKeyScopes.size).toBe(0);
    expect(Object.isFrozen(development)).toBe(true);

    expect(loadConfig({ NODE_ENV: 'test' })).toMatchObject({ nodeEnv: 'test', logLevel: 'warn', graphqlIde: true, metricsPort: undefined });

    expect(loadConfig(PRODUCTION)).toMatchObject({
      nodeEnv: 'production',
      internalSecret: SECRET,
      internalSecretGenerated: false,
      logLevel: 'info',
      corsOrigins: [],
      metricsPort: DEFAULT_PRODUCTION_METRICS_PORT,
      graphqlIde: false,
      testChannelEnabled: false,
      seedDemo: false,
      webhookAllowInternal: false,
    });
  });

  it('names every bad variable in one error, quoting what it got but never a secret', () => {
    expect(
      problemsOf({
        NODE_ENV: 'staging',
        GATEWAY_PORT: '65536',
        DRAIN_SECONDS: '2.5',
        TRUST_PROXY: 'maybe',
        LOG_LEVEL: 'loud',
        OTEL_TRACES_SAMPLER_ARG: '1.5',
        GATEWAY_URL: 'ftp://gateway',
        REDIS_URL: 'not a url',
        WEBHOOK_RETRY_SCHEDULE: '0,5 minutes',
        CORS_ORIGINS: 'https://ok.example, *',
        MONGODB_DB_PREFIX: 'bank prefix',
        INTERNAL_SECRET: 'too-short-secret',
        SERVICE_KEYS: 'statements=short',
      }),
    ).toEqual([
      'NODE_ENV must be one of development, production, test (got "staging")',
      'GATEWAY_PORT must be an integer from 0 to 65535 (got "65536")',
      'GATEWAY_URL must be an http(s) URL (got "ftp://gateway")',
      'TRUST_PROXY must be true or false (got "maybe")',
      'CORS_ORIGINS must list origins such as https://app.example.com or http://localhost:* (got "*")',
      'DRAIN_SECONDS must be an integer from 0 to 300 (got "2.5")',
      'LOG_LEVEL must be one of debug, info, warn, error, silent (got "loud")',
      'OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1 (got "1.5")',
      'MONGODB_DB_PREFIX must be up to 32 letters, digits, _ or - (got "bank prefix")',
      'REDIS_URL must be a URL (got "not a url")',
      'INTERNAL_SECRET must be at least 32 characters long',
      'SERVICE_KEYS must be a comma-separated list of name=key, each key at least 32 characters',
      'WEBHOOK_RETRY_SCHEDULE must be a comma-separated list of up to 50 durations of at most 7 days, such as 0,5s,5m,2h (got "0,5 minutes")',
    ]);
    // A connection string's password is masked where a bad URL is quoted back.
    expect(problemsOf({ SMTP_URL: 'smtp://mailer:hunter2-secret@mail host:25' })).toEqual([
      'SMTP_URL must be a URL (got "smtp://***@mail host:25")',
    ]);
    // Bounds are inclusive; durations stop at 7 days and 50 entries.
    expect(problemsOf({ GATEWAY_PORT: '65535', WEBHOOK_RETRY_SCHEDULE: '168h' })).toEqual([]);
    expect(problemsOf({ WEBHOOK_RETRY_SCHEDULE: '169h' })).toEqual([expect.stringMatching(/^WEBHOOK_RETRY_SCHEDULE must be/) as unknown]);
    expect(problemsOf({ WEBHOOK_RETRY_SCHEDULE: Array.from({ length: 51 }, () => '1s').join(',') })).toHaveLength(1);
  });

  it('accepts the spellings it accepted before: flags, numbers, durations, origins', () => {
    for (const [spelling, value] of [
      ['true', true],
      ['1', true],
      ['yes', true],
      ['false', false],
      ['0', false],
      ['no', false],
    ] as const)
      expect(loadConfig({ TRUST_PROXY: spelling }).trustProxy, spelling).toBe(value);
    expect(problemsOf({ TRUST_PROXY: 'TRUE' })).toEqual(['TRUST_PROXY must be true or false (got "TRUE")']);
    expect(loadConfig({ GATEWAY_PORT: ' 0x10 ', OTEL_TRACES_SAMPLER_ARG: '.25' })).toMatchObject({
      ports: { gateway: 16 },
      traceSampleRatio: 0.25,
    });
    expect(loadConfig({ WEBHOOK_RETRY_SCHEDULE: ' 250 , 2s,1 m, 1h ' }).webhookRetryScheduleMs).toEqual([250, 2000, 60_000, 3_600_000]);
    expect(loadConfig({ CORS_ORIGINS: ' HTTPS://App.Example ,, http://localhost:* ' }).corsOrigins).toEqual([
      'https://app.example',
      'http://localhost:*',
    ]);
  });

  it('takes an empty variable for unset, but for NODE_ENV, MONGODB_DB_PREFIX and CORS_ORIGINS', () => {
    const config = loadConfig({ GATEWAY_PORT: '', TRUST_PROXY: '', LOG_LEVEL: '', INTERNAL_SECRET: '', JWT_SECRET: '', OUTBOX_DIR: '' });
    expect(config).toMatchObject({ ports: { gateway: 4000 }, trustProxy: false, logLevel: 'info', internalSecretGenerated: true });
    expect(config.outboxChosen).toBe(false);
    expect(config.jwtSecret).toMatch(/^[0-9a-f]{64}$/);
    expect(loadConfig({ MONGODB_DB_PREFIX: '', CORS_ORIGINS: '' })).toMatchObject({ dbPrefix: '', corsOrigins: [] });
    expect(problemsOf({ NODE_ENV: '' })).toEqual(['NODE_ENV must be one of development, production, test (got "")']);
    expect(problemsOf({ NODE_ENV: 'production', INTERNAL_SECRET: '' })).toEqual([
      'INTERNAL_SECRET is required in production (at least 32 characters; e.g. `openssl rand -hex 32`)',
    ]);
  });

  it('requires in production what production needs, and refuses what it must not have, among the other problems', () => {
    expect(problemsOf({ NODE_ENV: 'production', GATEWAY_PORT: 'abc', EXPOSE_ERROR_DETAILS: 'true' })).toEqual([
      'GATEWAY_PORT must be an integer from 0 to 65535 (got "abc")',
      'INTERNAL_SECRET is required in production (at least 32 characters; e.g. `openssl rand -hex 32`)',
      'EXPOSE_ERROR_DETAILS is for a developer at work, never in production (it puts internal details in answers)',
    ]);
    expect(loadConfig({ NODE_ENV: 'development', EXPOSE_ERROR_DETAILS: 'true' }).exposeErrorDetails).toBe(true);
    const key = 'k'.repeat(40);
    expect(problemsOf({ ...PRODUCTION, SERVICE_KEYS: `operator=${key},payments=${key}1,user=${key}2` })).toEqual([
      "SERVICE_KEYS must not name a key payments: that name is one of the services' own (user, cards, payments, compliance, gateway, provision)",
      "SERVICE_KEYS must not name a key user: that name is one of the services' own (user, cards, payments, compliance, gateway, provision)",
    ]);
  });

  it('checks the variables that go together, whatever else is wrong', () => {
    expect(problemsOf({ GATEWAY_PORT: 'abc', HTTP_HEADERS_TIMEOUT_MS: '60000', HTTP_REQUEST_TIMEOUT_MS: '60000' })).toEqual([
      'GATEWAY_PORT must be an integer from 0 to 65535 (got "abc")',
      'HTTP_HEADERS_TIMEOUT_MS must be shorter than HTTP_REQUEST_TIMEOUT_MS',
    ]);
    // Against the other's default too.
    expect(problemsOf({ HTTP_HEADERS_TIMEOUT_MS: '300000' })).toEqual([
      'HTTP_HEADERS_TIMEOUT_MS must be shorter than HTTP_REQUEST_TIMEOUT_MS',
    ]);
    const keys = `statements=${'s'.repeat(40)},payments=${'p'.repeat(40)}`;
    expect(problemsOf({ SERVICE_KEYS: keys, SERVICE_KEY_SCOPES: JSON.stringify({ reporting: {}, payments: {} }) })).toEqual([
      'SERVICE_KEY_SCOPES names reporting, which SERVICE_KEYS does not name',
      "SERVICE_KEY_SCOPES must not scope payments: that name is one of the services' own",
    ]);
  });

  it('derives a default from the variables it depends on, and takes the variable where it is set', () => {
    const jwtOf = (secret: string) => createHmac('sha256', secret).update('payment-link-jwt').digest('hex');
    expect(loadConfig(PRODUCTION).jwtSecret).toBe(jwtOf(SECRET));
    expect(loadConfig({ ...PRODUCTION, JWT_SECRET: 'j'.repeat(32) }).jwtSecret).toBe('j'.repeat(32));
    // A generated secret is generated once: the JWT key is derived from the one the process signs with.
    const generated = loadConfig({});
    expect(generated.jwtSecret).toBe(jwtOf(generated.internalSecret));
    expect(loadConfig({}).internalSecret).not.toBe(generated.internalSecret);

    expect(loadConfig({ REST_PORT: '9090' })).toMatchObject({
      restPublicUrl: 'http://localhost:9090',
      paymentPageUrl: 'http://localhost:9090/pay',
    });
    expect(loadConfig({ REST_PUBLIC_URL: 'https://api.bank.example/' }).paymentPageUrl).toBe('https://api.bank.example/pay');
    expect(loadConfig({ PAYMENT_PAGE_URL: 'https://pay.example/p' }).paymentPageUrl).toBe('https://pay.example/p');
    expect(loadConfig({ USER_SUBGRAPH_PORT: '5001', GATEWAY_PORT: '5000' })).toMatchObject({
      subgraphUrls: { user: 'http://127.0.0.1:5001/graphql' },
      gatewayUrl: 'http://127.0.0.1:5000/graphql',
    });

    expect(loadConfig({ ...PRODUCTION, METRICS_PORT: '9100' }).metricsPort).toBe(9100);
    expect(loadConfig({ NODE_ENV: 'test', METRICS_PORT: '9100' }).metricsPort).toBe(9100);
    expect(problemsOf({ METRICS_PORT: '0' })).toEqual(['METRICS_PORT must be an integer from 1 to 65535 (got "0")']);

    expect(loadConfig({ TRUST_PROXY: 'true' }).httpLimits.maxConnectionsPerAddress).toBe(0);
    expect(loadConfig({ TRUST_PROXY: 'yes', HTTP_MAX_CONNECTIONS_PER_ADDRESS: '50' }).httpLimits.maxConnectionsPerAddress).toBe(50);
    expect(loadConfig({ TRUST_PROXY: 'false' }).httpLimits.maxConnectionsPerAddress).toBe(256);

    expect(loadConfig({ OUTBOX_DIR: '/var/outbox' })).toMatchObject({ outboxDir: '/var/outbox', outboxChosen: true });
  });

  it("takes a value that names one of Object.prototype's members for what it is: a bad value", () => {
    expect(
      problemsOf({
        WEBHOOK_RETRY_SCHEDULE: '5valueOf,1__proto__',
        LOG_LEVEL: 'constructor',
        IN_PROCESS_CALLS: '__proto__',
        TRUST_PROXY: 'valueOf',
        CORS_ORIGINS: 'toString',
      }),
    ).toEqual([
      'TRUST_PROXY must be true or false (got "valueOf")',
      'CORS_ORIGINS must list origins such as https://app.example.com or http://localhost:* (got "tostring")',
      'IN_PROCESS_CALLS must be one of none, adapter, all (got "__proto__")',
      'LOG_LEVEL must be one of debug, info, warn, error, silent (got "constructor")',
      'WEBHOOK_RETRY_SCHEDULE must be a comma-separated list of up to 50 durations of at most 7 days, such as 0,5s,5m,2h (got "5valueOf,1__proto__")',
    ]);
    const keys = `statements=${'s'.repeat(40)}`;
    expect(problemsOf({ SERVICE_KEYS: keys, SERVICE_KEY_SCOPES: '{"__proto__": {"users": "all"}, "constructor": {}}' })).toEqual([
      'SERVICE_KEY_SCOPES.__proto__.users must be "*" (every user) or a list of at most 100 SvcUserIds (letters, digits, underscores)',
    ]);
    // Names of the environment that are no variable are not read.
    const env: Env = JSON.parse('{"__proto__": "x", "constructor": "y", "valueOf": "z"}') as Env;
    expect(loadConfig(env).nodeEnv).toBe('development');
  });

  it('applies overrides over what it loaded', () => {
    const config = loadConfig({ NODE_ENV: 'test' }, { drainSeconds: 0, host: '0.0.0.0' });
    expect(config).toMatchObject({ drainSeconds: 0, host: '0.0.0.0', nodeEnv: 'test' });
    expect(Object.isFrozen(config)).toBe(true);
  });
});

describe('the configuration docs', () => {
  const read = (file: string) => readFileSync(path.join(REPO_ROOT, file), 'utf8');

  it('are what `npm run config-docs` writes from the definition (docs/operations.md and .env.example)', async () => {
    expect(await withConfigTable(read(OPERATIONS_DOC), path.join(REPO_ROOT, OPERATIONS_DOC))).toBe(read(OPERATIONS_DOC));
    expect(envExample()).toBe(read(ENV_EXAMPLE));
  });

  it('list every variable once, in .env.example and in the table', () => {
    const example = [...read(ENV_EXAMPLE).matchAll(/^(?:# )?([A-Z][A-Z0-9_]*)=/gm)].map((match) => match[1]);
    expect(example).toEqual(NAMES);
    const table = read(OPERATIONS_DOC).split('config-table:start')[1]!.split('config-table:end')[0]!;
    expect([...table.matchAll(/^\| `([A-Z][A-Z0-9_]*)`/gm)].map((match) => match[1]).toSorted()).toEqual(NAMES.toSorted());
  });
});
