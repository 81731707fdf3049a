import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ApolloServer, type ApolloServerPlugin, type BaseContext } from '@apollo/server';
import { buildSubgraphSchema } from '@apollo/subgraph';
import type { GraphQLResolverMap } from '@apollo/subgraph/dist/schema-helper/index.js';
import type { GraphQLFormattedError } from 'graphql';
import { parse } from 'graphql';
import { unwrapResolverError } from '@apollo/server/errors';
import { MongoNetworkError, MongoNotConnectedError, MongoServerClosedError, MongoServerError, MongoServerSelectionError, MongoTopologyClosedError } from 'mongodb';
import { REPO_ROOT, type Config, type SubgraphName } from '../runtime/config.js';
import { auditForwarder, auditTrail, type AuditTrail } from '../security/audit.js';
import { createGraphClient } from './graph-client.js';
import type { EventBus } from '../messaging/event-bus.js';
import { busDispatcher, Outbox, type Dispatcher } from '../messaging/outbox.js';
import { SweepLoop } from '../messaging/sweep.js';
import { appError, ErrorCode } from './errors.js';
import { operationTelemetryPlugin } from './telemetry.js';
import { enforceListCaps, type ListCaps } from './list-caps.js';
import { HTTP_TRANSPORT, type Transport } from '../http/transport.js';
import { apolloHandler, apolloLocal, localPost, startHttpService, type ContextBuilder, type Handler, type HttpService, type RequestScope } from '../http/server.js';
import type { Logger } from '../runtime/logger.js';
import type { Mongo } from '../mongo/mongo.js';
import { CLIENT_IP_HEADER, PRINCIPAL_HEADER, verifyClientIp, verifyPrincipal, type Principal } from '../security/principal.js';

/** What every subgraph's context starts from: the verified principal and the request's id and logger. */
export interface RequestBase extends BaseContext {
  principal: Principal;
  requestId: string;
  logger: Logger;
  /** The caller's address as the gateway saw it. */
  clientIp: string | null;
  /** Records this request's security-relevant acts in the audit log, as its principal. */
  audit: AuditTrail;
}

/** Reads a subgraph's SDL from `schema/<name>.graphql`, found from this module's location. */
export function subgraphSdl(name: SubgraphName): string {
  return readFileSync(path.join(REPO_ROOT, 'schema', `${name}.graphql`), 'utf8');
}

/** Longest error message sent (longer ones are shortened). */
const MAX_ERROR_MESSAGE = 1000;

/**
 * A long message without its middle: a coercion error reads `Variable "$input" got invalid value
 * <the value> at "input.x"; <the reason>`, so the start and the end (the path, which names the
 * field, and the reason) are kept and the echoed value is cut. A cut never splits a surrogate pair.
 */
function shortened(message: string): string {
  const keep = (MAX_ERROR_MESSAGE - 5) / 2;
  let head = Math.floor(keep);
  let tail = message.length - Math.floor(keep);
  if (/[\uD800-\uDBFF]/.test(message.charAt(head - 1))) head -= 1;
  if (/[\uDC00-\uDFFF]/.test(message.charAt(tail))) tail += 1;
  return `${message.slice(0, head)} […] ${message.slice(tail)}`;
}

/** Server error codes of a database that is shutting down or stepping down: it will be back. */
const DATABASE_GOING_AWAY = new Set([91, 189, 11600, 11602, 13435, 13436]);

/**
 * Codes of a connection the other side dropped. The database driver passes some of these on
 * unwrapped: a pooled connection the stopping server had closed fails its next write with Node's
 * own EPIPE ("This socket has been ended by the other party"), not a MongoNetworkError.
 */
const CONNECTION_DROPPED = new Set(['EPIPE', 'ECONNRESET', 'ECONNREFUSED']);

/** True when an error is a connection the other side dropped, passed on as Node's own error. */
export function isConnectionDropped(error: unknown): boolean {
  return error instanceof Error && CONNECTION_DROPPED.has((error as NodeJS.ErrnoException).code ?? '');
}

/** True when an error means the database cannot be reached now (down, restarting, unreachable), not that the request is wrong. */
export function isDatabaseUnavailable(error: unknown): boolean {
  return (
    error instanceof MongoNetworkError ||
    error instanceof MongoServerSelectionError ||
    error instanceof MongoNotConnectedError ||
    error instanceof MongoServerClosedError ||
    error instanceof MongoTopologyClosedError ||
    (error instanceof MongoServerError && typeof error.code === 'number' && DATABASE_GOING_AWAY.has(error.code))
  );
}

/** True for an error no resolver meant to answer with: Apollo's code for a thrown non-GraphQL error, or ours. */
function isUnexpected(code: unknown): boolean {
  return code === undefined || code === 'INTERNAL_SERVER_ERROR' || code === ErrorCode.INTERNAL;
}

/**
 * Hides the message of unexpected errors in every mode (it may print internal objects), unless
 * `EXPOSE_ERROR_DETAILS` is on; known codes keep theirs. `unexpectedErrorLog` writes the detail to
 * the log with the request id. A database that cannot be reached is UNAVAILABLE (503 through the
 * REST adapter), with no driver message.
 */
export function formatError(config: Config, logger: Logger) {
  return (formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError => {
    const original = unwrapResolverError(error);
    if (isDatabaseUnavailable(original)) {
      return { message: 'The database is unavailable; try again shortly.', ...(formatted.path ? { path: formatted.path } : {}), extensions: { code: ErrorCode.UNAVAILABLE } };
    }
    if (isConnectionDropped(original)) {
      // Worth a retry, and worth a line in the log: which connection it was is not known here.
      logger.warn('connection dropped', { path: formatted.path, error: original });
      return { message: 'A connection this operation needed was dropped; try again shortly.', ...(formatted.path ? { path: formatted.path } : {}), extensions: { code: ErrorCode.UNAVAILABLE } };
    }
    const code = formatted.extensions?.code;
    // A message that echoes a client's value (an input coercion error) is shortened: a small request must not make a huge answer.
    if (formatted.message.length > MAX_ERROR_MESSAGE) formatted = { ...formatted, message: shortened(formatted.message) };
    if (isUnexpected(code) && !config.exposeErrorDetails) {
      return { message: 'Internal server error', ...(formatted.path ? { path: formatted.path } : {}), extensions: { code: ErrorCode.INTERNAL } };
    }
    return formatted;
  };
}

/**
 * Logs each unexpected error of an operation in full, with the request id, where it happened
 * (INTERNAL arriving from a subgraph was logged there). The answer carries only a generic message.
 */
export function unexpectedErrorLog(logger: Logger): ApolloServerPlugin<BaseContext & { requestId?: string }> {
  return {
    async requestDidStart() {
      return {
        async didEncounterErrors({ errors, contextValue }) {
          for (const error of errors) {
            const code = error.extensions.code;
            if (code !== undefined && code !== 'INTERNAL_SERVER_ERROR') continue;
            const original = unwrapResolverError(error);
            if (isDatabaseUnavailable(original) || isConnectionDropped(original)) continue;
            logger.error('unexpected error', { requestId: contextValue.requestId, message: error.message, path: error.path, error: original });
          }
        },
      };
    },
  };
}

/** What starting any one subgraph takes. */
export interface SubgraphStartOptions {
  config: Config;
  logger: Logger;
  mongo: Mongo;
  /** Defaults to the configured port of the subgraph. */
  port?: number | undefined;
  /** Where the subgraph's outbox is published (its messaging engine runs while the subgraph does). */
  bus: EventBus;
  /** How it calls the graph and offers its endpoints besides HTTP; HTTP alone by default. */
  transport?: Transport;
}

/** Options of one subgraph's server. */
export interface SubgraphOptions<TContext extends RequestBase> extends SubgraphStartOptions {
  name: SubgraphName;
  /** The subgraph's resolver map (codegen's `Resolvers` type, which Apollo's map type does not name). */
  resolvers: object;
  /** The cap of every list its SDL takes from clients (its `list-caps.ts`), enforced before the resolvers run. */
  listCaps: ListCaps;
  /** Dispatchers of the subgraph's own events, besides the bus and the audit forwarding every subgraph has. */
  dispatchers?: readonly Dispatcher[];
  /** Adds the subgraph's own per-request state (DataLoaders, data sources) to the base. */
  createContext: (base: RequestBase) => TContext;
  /** Routes besides `/graphql`, tried first; return false to fall through. */
  extraRoutes?: (req: Parameters<Handler>[0], res: Parameters<Handler>[1], scope: RequestScope) => Promise<boolean>;
}

/**
 * Starts a Federation 2 subgraph: its schema from `schema/<name>.graphql`, and a context that
 * accepts only calls carrying a principal signed by the gateway.
 */
export async function startSubgraph<TContext extends RequestBase>(options: SubgraphOptions<TContext>): Promise<HttpService> {
  const { config, name } = options;
  const logger = options.logger.child({ service: `${name}-subgraph` });
  const apollo = new ApolloServer<TContext>({
    schema: enforceListCaps(buildSubgraphSchema({ typeDefs: parse(subgraphSdl(name)), resolvers: options.resolvers as GraphQLResolverMap<unknown> }), options.listCaps),
    introspection: config.nodeEnv !== 'production',
    includeStacktraceInErrorResponses: config.exposeErrorDetails,
    // The service's own SIGTERM handling closes the HTTP server first, then Apollo.
    stopOnTerminationSignals: false,
    formatError: formatError(config, logger),
    plugins: [operationTelemetryPlugin(`${name}-subgraph`), unexpectedErrorLog(logger)],
    logger: { debug: () => {}, info: () => {}, warn: (m) => logger.warn(String(m)), error: (m) => logger.error(String(m)) },
  });
  await apollo.start();
  const db = options.mongo.db(name);
  await Outbox.createIndexes(db);
  const context: ContextBuilder<TContext> = async (source, scope) => {
    const header = source.headers[PRINCIPAL_HEADER];
    const principal = verifyPrincipal(typeof header === 'string' ? header : undefined, config.internalSecret);
    if (!principal) {
      throw appError(ErrorCode.UNAUTHENTICATED, 'This subgraph answers the gateway only: the signed internal principal is missing or invalid.', { httpStatus: 401 });
    }
    const clientIp = verifyClientIp(source.headers[CLIENT_IP_HEADER], config.internalSecret);
    const audit = auditTrail(db, { principal, requestId: scope.requestId, clientIp, logger: scope.logger });
    return options.createContext({ principal, requestId: scope.requestId, logger: scope.logger, clientIp, audit });
  };
  const graphql = apolloHandler(apollo, { bodyLimitBytes: config.bodyLimitBytes, context });
  const service = await startHttpService({
    name: `${name}-subgraph`,
    host: config.host,
    port: options.port ?? config.ports[name],
    logger,
    ready: () => options.mongo.ping(),
    metrics: config.metricsPort === undefined,
    // Its callers are the gateways, each with many connections from one address: no cap by address.
    limits: { ...config.httpLimits, maxConnectionsPerAddress: 0 },
    handle: async (req, res, scope) => {
      if (options.extraRoutes && (await options.extraRoutes(req, res, scope))) return;
      await graphql(req, res, scope);
    },
  });
  const dispatchers = [busDispatcher(options.bus), auditForwarder(createGraphClient(config, name, options.transport)), ...(options.dispatchers ?? [])];
  const outbox = new Outbox(db, dispatchers, logger).start();
  const withdraw = (options.transport ?? HTTP_TRANSPORT).serve(`${service.url}/graphql`, localPost(apolloLocal(apollo, context, logger, `${name}-subgraph`)));
  return {
    ...service,
    close: async () => {
      withdraw();
      await service.close();
      await outbox.stop();
      await apollo.stop();
    },
  };
}

/**
 * Runs `task` every `everyMs` while the service runs (a scheduled job: retries that are due, a
 * daily report), and stops it when the service closes, after the run in flight.
 */
export function withRecurringTask(service: HttpService, everyMs: number, task: () => Promise<unknown>, logger: Logger): HttpService {
  const job = new SweepLoop('recurring task', task, everyMs, logger).start(false);
  return {
    ...service,
    close: async () => {
      await job.stop();
      await service.close();
    },
  };
}
