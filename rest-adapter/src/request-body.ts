import type { IncomingMessage } from 'node:http';
import { ErrorCode } from '../../platform/contracts/errors.js';
import { BodyTooLargeError, MAX_JSON_DEPTH, nestsDeeperThan, readBody } from '../../platform/http/server.js';
import { bodyRefusals } from '../../platform/telemetry/metrics.js';
import { readMultipart } from './multipart.js';
import { inputRefusal, Refusal } from './refusal.js';
import { JSON_BODY_LIMIT_BYTES, RouteInputError, type Route, type UploadedFile } from './routes/index.js';

/** A client requestId the aggregator spec allows echoing: 1-32 characters, no < or >, not only whitespace. */
const ECHOABLE_REQUEST_ID = /^(?!\s*$)[^<>]{1,32}$/;

/** What a route reads of a request's body: the JSON value, the uploaded files, and the client's requestId where the route echoes it. */
export interface RequestBody {
  body: unknown;
  files: UploadedFile[];
  echoedRequestId?: string;
}

/**
 * Reads the body the route takes (JSON of the route's shape, a multipart upload, or none),
 * within the route's and the deployment's size limits; throws a Refusal for any other body.
 */
export async function readRequestBody(route: Route, req: IncomingMessage, bodyLimitBytes: number): Promise<RequestBody> {
  if (route.body === 'none') return { body: undefined, files: [] };
  if (route.body === 'multipart') {
    try {
      const { files } = await readMultipart(req, route.maxFileBytes ?? bodyLimitBytes);
      return { body: undefined, files };
    } catch (error) {
      if (!(error instanceof RouteInputError)) throw error;
      throw inputRefusal(null, error);
    }
  }
  let text: string;
  try {
    text = await readBody(req, Math.min(route.maxBodyBytes ?? JSON_BODY_LIMIT_BYTES, bodyLimitBytes));
  } catch (error) {
    if (error instanceof BodyTooLargeError) {
      bodyRefusals.inc({ service: 'rest-adapter' });
      // The rest of the body is not read: the connection is closed after the answer.
      throw new Refusal(413, { code: ErrorCode.PAYLOAD_TOO_LARGE, message: error.message }, { closeConnection: true });
    }
    throw error;
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Refusal(400, { code: ErrorCode.BAD_REQUEST, message: 'The request body is not valid JSON.' });
  }
  if (nestsDeeperThan(body)) {
    throw new Refusal(400, { code: ErrorCode.BAD_REQUEST, message: `The request body nests deeper than ${MAX_JSON_DEPTH} levels.` });
  }
  const isArray = Array.isArray(body);
  if (body === null || typeof body !== 'object' || isArray !== (route.body === 'array')) {
    throw new Refusal(400, { code: ErrorCode.BAD_REQUEST, message: `The request body must be a JSON ${route.body}.` });
  }
  const echoed = route.requestIdOf?.(body);
  return echoed !== undefined && ECHOABLE_REQUEST_ID.test(echoed) ? { body, files: [], echoedRequestId: echoed } : { body, files: [] };
}
