import { ownValue } from '../contracts/own.js';
import type { Config } from './config.js';

type Keys = readonly (keyof Config)[];

/** What `createGraphClient` reads. */
const GRAPH_CLIENT_KEYS = ['gatewayUrl', 'internalSecret'] as const satisfies Keys;

/** What `formatError` reads. */
const ERROR_FORMAT_KEYS = ['exposeErrorDetails'] as const satisfies Keys;

/** What a service passes to `startHttpService`: where it listens, whether it serves its own metrics, its clients' limits. */
const HTTP_SERVICE_KEYS = ['host', 'ports', 'metricsPort', 'httpLimits'] as const satisfies Keys;

/** What `startSubgraph` reads, its graph client's and its error format's included. */
const SUBGRAPH_KIT_KEYS = [
  ...HTTP_SERVICE_KEYS,
  ...GRAPH_CLIENT_KEYS,
  ...ERROR_FORMAT_KEYS,
  'nodeEnv',
  'bodyLimitBytes',
] as const satisfies Keys;

/** What `createNotifier` is given. */
const NOTIFIER_KEYS = ['smtpUrl', 'mailFrom', 'smsWebhookUrl', 'outboxDir'] as const satisfies Keys;

/** What a subgraph's webhook `Deliveries` are given. */
const WEBHOOK_KEYS = ['webhookRetryScheduleMs', 'webhookDisableAfter', 'webhookAllowInternal'] as const satisfies Keys;

/**
 * The settings each service reads, its platform kits' included: `configFor` hands a service these
 * and nothing else, and its `start` is typed with them, so reading any other is a type error.
 */
export const SERVICE_CONFIG_KEYS = {
  gateway: [
    ...HTTP_SERVICE_KEYS,
    ...ERROR_FORMAT_KEYS,
    'nodeEnv',
    'internalSecret',
    'jwtSecret',
    'subgraphUrls',
    'subgraphTimeoutMs',
    'redisUrl',
    'dbPrefix',
    'sessionCacheSeconds',
    'serviceKeyHashes',
    'serviceKeyScopes',
    'trustProxy',
    'corsOrigins',
    'graphqlIde',
    'bodyLimitBytes',
    'graphqlBodyLimitBytes',
    'documentLimits',
    'operationLimits',
    'rateLimits',
    'subscriptionLimits',
    'idempotencyKeyTtlSeconds',
    'trustedDocuments',
    'trustedDocumentsFile',
  ],
  'rest-adapter': [
    ...HTTP_SERVICE_KEYS,
    'nodeEnv',
    'gatewayUrl',
    'internalSecret',
    'trustProxy',
    'corsOrigins',
    'bodyLimitBytes',
    'restPublicUrl',
    'seedDemo',
  ],
  user: [
    ...SUBGRAPH_KIT_KEYS,
    ...NOTIFIER_KEYS,
    'outboxChosen',
    'operatorEmail',
    'geocoderPreload',
    'tokenLifetimeSeconds',
    'prospectTokenLifetimeSeconds',
    'aggregatorTokenLifetimeSeconds',
    'confinedTokenLifetimeSeconds',
    'deviceProofWindowSeconds',
    'testChannelEnabled',
    'loginMaxFailures',
    'lockPeriodSeconds',
    'loginAccountMaxFailures',
    'loginAccountWindowSeconds',
    'loginKnownSourceDays',
  ],
  cards: [...SUBGRAPH_KIT_KEYS, ...WEBHOOK_KEYS],
  payments: [
    ...SUBGRAPH_KIT_KEYS,
    ...NOTIFIER_KEYS,
    ...WEBHOOK_KEYS,
    'jwtSecret',
    'paymentPageUrl',
    'paymentLinkLifetimeSeconds',
    'cardOverdraftLimit',
    'cardHoldExpirySeconds',
  ],
  compliance: [...SUBGRAPH_KIT_KEYS],
} as const satisfies Record<string, Keys>;

/** A service that `configFor` slices the configuration for. */
export type ServiceName = keyof typeof SERVICE_CONFIG_KEYS;

/** The settings service `S` receives: those `SERVICE_CONFIG_KEYS` lists for it. */
export type ServiceConfig<S extends ServiceName> = Pick<Config, (typeof SERVICE_CONFIG_KEYS)[S][number]>;

/** What `createGraphClient` reads. */
export type GraphClientConfig = Pick<Config, (typeof GRAPH_CLIENT_KEYS)[number]>;

/** What `formatError` reads. */
export type ErrorFormatConfig = Pick<Config, (typeof ERROR_FORMAT_KEYS)[number]>;

/** What `startSubgraph` reads: every subgraph's slice includes it. */
export type SubgraphKitConfig = Pick<Config, (typeof SUBGRAPH_KIT_KEYS)[number]>;

/** What `openDatabase` reads (the scripts open the database, not the services). */
export type DatabaseConfig = Pick<Config, 'mongodbUri' | 'dataDir' | 'ferretdbBin' | 'dbPrefix'>;

/** What `startObservability` reads (the scripts start it, not the services). */
export type ObservabilityConfig = Pick<Config, 'otlpEndpoint' | 'traceSampleRatio' | 'metricsPort' | 'host'>;

/**
 * A new object with only the settings `service` reads, for its `start`: what it is not given it
 * cannot read, at run time as in its types. Frozen, as the configuration it comes from is.
 */
export function configFor<S extends ServiceName>(service: S, config: Config): ServiceConfig<S> {
  const keys = ownValue<Keys>(SERVICE_CONFIG_KEYS, service);
  if (!keys) throw new Error(`No service is named ${service}.`);
  return Object.freeze(Object.fromEntries(keys.map((key) => [key, config[key]]))) as ServiceConfig<S>;
}
