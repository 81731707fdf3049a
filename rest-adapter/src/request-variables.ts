import { ErrorCode } from '../../platform/contracts/errors.js';
import type { RequestValidator } from './contract/request-validation.js';
import { inputRefusal } from './refusal.js';
import { RouteInputError, type Route, type UploadedFile } from './routes/index.js';

/** What the route table's checks and mapping see of a request whose body has been read. */
export interface RequestParts {
  params: Record<string, string>;
  /** A path parameter whose percent-encoding is malformed. */
  undecodable: string | undefined;
  query: URLSearchParams;
  body: unknown;
  files: UploadedFile[];
}

/** Checks the request against the route's schemas and maps it onto the operation's variables; throws a Refusal when it cannot. */
export function variablesOf(
  route: Route,
  validator: RequestValidator,
  { params, undecodable, query, body, files }: RequestParts,
): Record<string, unknown> {
  try {
    if (undecodable !== undefined)
      throw new RouteInputError(ErrorCode.BAD_REQUEST, `The path parameter ${undecodable} is not valid percent-encoding.`, undecodable);
    validator.check(route, { params, query, body });
    return route.variables({ params, body, query, files });
  } catch (error) {
    if (!(error instanceof RouteInputError)) throw error;
    throw inputRefusal(route, error);
  }
}
