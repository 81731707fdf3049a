import type { IncomingMessage, ServerResponse } from 'node:http';
import { ErrorCode } from '../../platform/contracts/errors.js';
import type { RequestScope } from '../../platform/http/server.js';
import type { DecimalAnswers } from './contract/decimal-answers.js';
import type { RequestValidator } from './contract/request-validation.js';
import { callGateway, type GatewayLink } from './gateway-call.js';
import { payloadOf } from './gateway-answer.js';
import { Refusal } from './refusal.js';
import { sendRefusal, sendSuccess } from './replies.js';
import { readRequestBody } from './request-body.js';
import { variablesOf } from './request-variables.js';
import type { Route } from './routes/index.js';

/** What serving a route needs besides the request: the gateway, the request checks and the decimal fields of the answers. */
export interface RoutePipeline extends GatewayLink {
  validator: RequestValidator;
  decimals: DecimalAnswers;
}

/** A request matched to a route: its path parameters and URL. */
export interface MatchedRequest {
  route: Route;
  params: Record<string, string>;
  /** A path parameter whose percent-encoding is malformed. */
  undecodable: string | undefined;
  url: URL;
}

/**
 * Serves a matched route: credential, body, checks and variables, the gateway's operation, then
 * the documented answer. Every refusal on the way answers in the route's envelope, with the
 * client's requestId once the body has given one the route echoes.
 */
export async function serveRoute(
  pipeline: RoutePipeline,
  matched: MatchedRequest,
  req: IncomingMessage,
  res: ServerResponse,
  scope: RequestScope,
): Promise<void> {
  const { route, params, undecodable, url } = matched;
  let requestId = scope.requestId;
  try {
    if (route.credential && !req.headers[route.credential]) {
      throw new Refusal(route.missingCredentialStatus ?? 401, {
        code: ErrorCode.TOKEN_MISSING,
        message: `The ${route.credential} header is required.`,
        field: route.credential,
      });
    }
    const { body, files, echoedRequestId } = await readRequestBody(route, req, pipeline.config.bodyLimitBytes);
    requestId = echoedRequestId ?? requestId;
    const variables = variablesOf(route, pipeline.validator, { params, undecodable, query: url.searchParams, body, files });
    const answer = await callGateway(pipeline, route, variables, req, scope);
    const payload = payloadOf(route, pipeline.operations.get(route.operation)!, answer, pipeline.decimals);
    sendSuccess(res, route, payload, requestId, answer.replayed);
  } catch (error) {
    if (!(error instanceof Refusal)) throw error;
    sendRefusal(res, route.api, error, requestId);
  }
}
