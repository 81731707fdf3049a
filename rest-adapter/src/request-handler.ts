import type { IncomingMessage, ServerResponse } from 'node:http';
import { ErrorCode } from '../../platform/contracts/errors.js';
import { sendJson, type Handler, type RequestScope } from '../../platform/http/server.js';
import type { ContractDocuments } from './contract-documents.js';
import { sendError, serveRoute, type RoutePipeline } from './route-pipeline.js';
import type { createRouter } from './router.js';

/**
 * The adapter's HTTP handler: its own documents first, then the route of the method and path
 * (404 for an unknown path, 405 for another method), served by the route pipeline.
 */
export function requestHandler(documents: ContractDocuments, match: ReturnType<typeof createRouter>, pipeline: RoutePipeline): Handler {
  return async (req: IncomingMessage, res: ServerResponse, scope: RequestScope): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (await documents(req, res, url.pathname, scope)) return;
    const found = match(req.method ?? 'GET', url.pathname);
    if (!found) {
      sendJson(res, 404, {
        error: { code: ErrorCode.NOT_FOUND, message: `No route for ${req.method} ${url.pathname}.` },
        requestId: scope.requestId,
      });
      return;
    }
    if ('allowed' in found) {
      sendJson(
        res,
        405,
        {
          error: { code: ErrorCode.METHOD_NOT_ALLOWED, message: `${url.pathname} answers ${found.allowed.join(', ')}.` },
          requestId: scope.requestId,
        },
        { allow: found.allowed.join(', ') },
      );
      return;
    }
    const { route, params, undecodable } = found;
    scope.route = found.template;
    try {
      await serveRoute(pipeline, { route, params, undecodable, url }, req, res, scope);
    } catch (error) {
      // Anything unexpected still answers in the route's own error envelope, and says nothing of itself.
      scope.logger.error('unhandled error', { error });
      if (res.headersSent) res.end();
      else sendError(res, route.api, 500, { code: ErrorCode.INTERNAL, message: 'Internal server error.' }, scope.requestId);
    }
  };
}
