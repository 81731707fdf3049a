import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from '../runtime/config.js';
import type { Logger } from '../runtime/logger.js';
import { metricsExposition } from './metrics.js';

/** A process's tracing and, where METRICS_PORT asks for one, its metrics listener. */
export interface Observability {
  /** The metrics listener's URL, when it has one of its own. */
  metricsUrl: string | null;
  /** Exports the spans still pending and closes the metrics listener. */
  stop(): Promise<void>;
}

/**
 * Starts what watches a process: tracing under `serviceName`, and `GET /metrics` on a port of
 * its own when `config.metricsPort` is set (otherwise each service answers it on its own port).
 * Called first at start-up, before the services it watches.
 */
export async function startObservability(config: Config, serviceName: string, logger: Logger): Promise<Observability> {
  const { startTracing } = await import('./sdk.js');
  const tracing = await startTracing({ serviceName, otlpEndpoint: config.otlpEndpoint, sampleRatio: config.traceSampleRatio });
  if (config.otlpEndpoint) logger.info('exporting traces', { otlpEndpoint: config.otlpEndpoint, sampleRatio: config.traceSampleRatio });
  if (config.metricsPort === undefined) return { metricsUrl: null, stop: () => tracing.shutdown() };
  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found: this port answers GET /metrics.\n');
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
    server.listen(config.metricsPort, config.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const metricsUrl = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}/metrics`;
  logger.info('metrics listening', { url: metricsUrl });
  return {
    metricsUrl,
    stop: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await tracing.shutdown();
    },
  };
}
