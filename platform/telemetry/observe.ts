import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ObservabilityConfig } from '../runtime/config-slices.js';
import type { Logger } from '../runtime/logger.js';
import { metricsExposition } from './metrics.js';

/** A process's tracing and, where METRICS_PORT asks for one, its metrics listener. */
export interface Observability {
  /** The metrics listener's URL, when it has one of its own. */
  metricsUrl: string | null;
  /** Exports the spans still pending and closes the metrics listener. */
  stop(): Promise<void>;
}

/** An operator's route beside `/metrics` (the gateway's `/dependencies`): its JSON answer. */
export type OperatorRoute = () => Promise<unknown>;

/** The operator routes of this process, by path: served on the metrics listener, never on a public port. */
const operatorRoutes = new Map<string, OperatorRoute>();

/**
 * Offers `GET <path>` on this process's metrics listener (METRICS_PORT) beside `/metrics`.
 * Returns the withdrawal, for the service's close.
 */
export function offerOperatorRoute(path: string, route: OperatorRoute): () => void {
  operatorRoutes.set(path, route);
  return () => {
    if (operatorRoutes.get(path) === route) operatorRoutes.delete(path);
  };
}

/** A started metrics listener. */
export interface MetricsListener {
  url: string;
  close(): Promise<void>;
}

/**
 * Listens on `port` for `GET /metrics` and the operator routes offered (`offerOperatorRoute`), and
 * answers 404 to anything else: the port operators and Prometheus reach, kept off the public one.
 */
export async function startMetricsListener(port: number, host: string, logger: Logger): Promise<MetricsListener> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0]!;
    const route = req.method === 'GET' ? operatorRoutes.get(path) : undefined;
    if (route) {
      route().then(
        (body) =>
          res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' }).end(JSON.stringify(body)),
        (error: unknown) => {
          logger.error('operator route failed', { path, error });
          res.writeHead(500, { 'content-type': 'text/plain' }).end('Internal server error.\n');
        },
      );
      return;
    }
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found: this port answers GET /metrics and the operator routes.\n');
      return;
    }
    metricsExposition().then(
      ({ contentType, text }) => res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store' }).end(text),
      (error: unknown) => {
        logger.error('metrics not collected', { error });
        res.writeHead(500, { 'content-type': 'text/plain' }).end('Metrics could not be collected.\n');
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const bound = (server.address() as AddressInfo).port;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${bound}`;
  logger.info('metrics listening', { url: `${url}/metrics` });
  return {
    url,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Starts what watches a process: tracing under `serviceName`, and `GET /metrics` (with the
 * gateway's `GET /dependencies`) on a port of its own when `config.metricsPort` is set (always in
 * production; otherwise each service answers them on its own port). Called first at start-up,
 * before the services it watches.
 */
export async function startObservability(config: ObservabilityConfig, serviceName: string, logger: Logger): Promise<Observability> {
  const { startTracing } = await import('./sdk.js');
  const tracing = await startTracing({ serviceName, otlpEndpoint: config.otlpEndpoint, sampleRatio: config.traceSampleRatio });
  if (config.otlpEndpoint) logger.info('exporting traces', { otlpEndpoint: config.otlpEndpoint, sampleRatio: config.traceSampleRatio });
  if (config.metricsPort === undefined) return { metricsUrl: null, stop: () => tracing.shutdown() };
  const listener = await startMetricsListener(config.metricsPort, config.host, logger);
  return {
    metricsUrl: `${listener.url}/metrics`,
    stop: async () => {
      await listener.close();
      await tracing.shutdown();
    },
  };
}
