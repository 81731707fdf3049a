import type { ServiceConfig } from '../../platform/runtime/config-slices.js';
import { HTTP_TRANSPORT, type Transport } from '../../platform/http/transport.js';
import { startHttpService, type HttpService } from '../../platform/http/server.js';
import type { Logger } from '../../platform/runtime/logger.js';
import { contractDocuments } from './contract-documents.js';
import { DecimalAnswers } from './contract/decimal-answers.js';
import { RequestValidator } from './contract/request-validation.js';
import { apiSchema } from './contract/api-schema.js';
import { loadOperation } from './operations.js';
import { requestHandler } from './request-handler.js';
import { createRouter } from './router.js';
import { ROUTES } from './routes/index.js';

/**
 * Starts the REST adapter: each documented path of the two specs, mapped by the route table
 * onto a GraphQL operation sent to the gateway, with the documented envelope and statuses.
 */
export async function start(options: {
  config: ServiceConfig<'rest-adapter'>;
  logger: Logger;
  port?: number;
  /** How it sends operations to the gateway; HTTP by default. */
  transport?: Transport;
}): Promise<HttpService> {
  const { config } = options;
  const logger = options.logger.child({ service: 'rest-adapter' });
  const pipeline = {
    config,
    transport: options.transport ?? HTTP_TRANSPORT,
    operations: new Map(ROUTES.map((route) => [route.operation, loadOperation(route.operation)])),
    validator: new RequestValidator(ROUTES),
    decimals: new DecimalAnswers(apiSchema()),
  };
  const handle = requestHandler(contractDocuments(config), createRouter(ROUTES), pipeline);

  return startHttpService({
    name: 'rest-adapter',
    host: config.host,
    port: options.port ?? config.ports.rest,
    logger,
    // Ready while it can serve; the gateway behind it has readiness of its own.
    ready: async () => true,
    cors: { origins: config.corsOrigins },
    metrics: config.metricsPort === undefined,
    limits: config.httpLimits,
    handle,
  });
}
