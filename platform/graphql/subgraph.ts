import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ApolloServer, type BaseContext } from '@apollo/server';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginLandingPageDisabled,
} from '@apollo/server/plugin/disabled';
import { buildSubgraphSchema } from '@apollo/subgraph';
import type { GraphQLResolverMap } from '@apollo/subgraph/dist/schema-helper/index.js';
import { parse } from 'graphql';
import { REPO_ROOT, type SubgraphName } from '../runtime/config.js';
import type { SubgraphKitConfig } from '../runtime/config-slices.js';
import { auditForwarder, auditTrail, type AuditTrail } from '../messaging/audit.js';
import { createGraphClient } from './graph-client.js';
import type { EventBus } from '../messaging/event-bus.js';
import { busDispatcher, Outbox, type Dispatcher } from '../messaging/outbox.js';
import { appError, ErrorCode } from '../contracts/errors.js';
import { formatError, unexpectedErrorLog } from './error-format.js';
import { operationTelemetryPlugin } from './telemetry.js';
import { enforceListCaps, type ListCaps } from './list-caps.js';
import { HTTP_TRANSPORT, type Transport } from '../http/transport.js';
import { httpJsonRoutes, localJsonRoute, type JsonRoute } from '../http/json-route.js';
import { apolloLogger, apolloRunner, graphqlHandler, graphqlLocal, type ContextBuilder } from './apollo-http.js';
import { startHttpService, type HttpService } from '../http/server.js';
import type { Logger } from '../runtime/logger.js';
import type { Mongo } from '../mongo/mongo.js';
import { CLIENT_IP_HEADER, PRINCIPAL_HEADER, verifyClientIp, verifyPrincipal } from '../security/signed-headers.js';
import { type Principal } from '../contracts/principal.js';

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

/** What starting any one subgraph takes: `C` is the subgraph's own slice of the configuration. */
export interface SubgraphStartOptions<C extends SubgraphKitConfig = SubgraphKitConfig> {
  config: C;
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
  /** JSON POST routes besides `/graphql`, served over HTTP and offered through the transport alike. */
  routes?: readonly JsonRoute[];
}

/**
 * Starts a Federation 2 subgraph: its schema from `schema/<name>.graphql`, and a context that
 * accepts only calls carrying a principal signed by the gateway.
 */
export async function startSubgraph<TContext extends RequestBase>(options: SubgraphOptions<TContext>): Promise<HttpService> {
  const { config, name } = options;
  const logger = options.logger.child({ service: `${name}-subgraph` });
  const apollo = new ApolloServer<TContext>({
    schema: enforceListCaps(
      buildSubgraphSchema({ typeDefs: parse(subgraphSdl(name)), resolvers: options.resolvers as GraphQLResolverMap<unknown> }),
      options.listCaps,
    ),
    introspection: config.nodeEnv !== 'production',
    includeStacktraceInErrorResponses: config.exposeErrorDetails,
    // The service's own SIGTERM handling closes the HTTP server first, then Apollo.
    stopOnTerminationSignals: false,
    formatError: formatError(config, logger),
    plugins: [
      // No page for browsers (Apollo's loads from a CDN; only the gateway calls a subgraph).
      ApolloServerPluginLandingPageDisabled(),
      // No cache hints (every answer is `no-store`) and no Apollo traces (ours are OpenTelemetry's):
      // neither is then prepared on each request, nor the hints around each field resolved.
      ApolloServerPluginCacheControlDisabled(),
      ApolloServerPluginInlineTraceDisabled(),
      operationTelemetryPlugin(`${name}-subgraph`),
      unexpectedErrorLog(logger),
    ],
    logger: apolloLogger(logger),
  });
  await apollo.start();
  const db = options.mongo.db(name);
  await Outbox.createIndexes(db);
  const context: ContextBuilder<TContext> = async (source, scope) => {
    const header = source.headers[PRINCIPAL_HEADER];
    const principal = verifyPrincipal(typeof header === 'string' ? header : undefined, config.internalSecret);
    if (!principal) {
      throw appError(
        ErrorCode.UNAUTHENTICATED,
        'This subgraph answers the gateway only: the signed internal principal is missing or invalid.',
        { httpStatus: 401 },
      );
    }
    const clientIp = verifyClientIp(source.headers[CLIENT_IP_HEADER], config.internalSecret);
    const audit = auditTrail(db, { principal, requestId: scope.requestId, clientIp, logger: scope.logger });
    return options.createContext({ principal, requestId: scope.requestId, logger: scope.logger, clientIp, audit });
  };
  const endpoint = { bodyLimitBytes: config.bodyLimitBytes, context };
  const graphql = graphqlHandler(apolloRunner(apollo), endpoint);
  const routes = options.routes ?? [];
  const jsonRoutes = httpJsonRoutes(routes);
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
      if (await jsonRoutes(req, res, scope)) return;
      await graphql(req, res, scope);
    },
  });
  const dispatchers = [
    busDispatcher(options.bus),
    auditForwarder(createGraphClient(config, name, options.transport)),
    ...(options.dispatchers ?? []),
  ];
  const outbox = new Outbox(db, dispatchers, logger).start();
  const transport = options.transport ?? HTTP_TRANSPORT;
  const withdrawals = [
    transport.serve(`${service.url}/graphql`, graphqlLocal(apolloRunner(apollo), endpoint, logger, `${name}-subgraph`)),
    ...routes.map((route) => transport.serve(`${service.url}${route.path}`, localJsonRoute(route, `${name}-subgraph`))),
  ];
  return {
    ...service,
    close: async () => {
      for (const withdraw of withdrawals) withdraw();
      await service.close();
      await outbox.stop();
      await apollo.stop();
    },
  };
}
