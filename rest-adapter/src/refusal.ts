import type { RouteError } from './envelopes.js';
import { statusOfCode, type Route, type RouteInputError } from './routes/index.js';

/** A request the adapter answers with an error: each step of the pipeline throws one, and one place sends it. */
export class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly error: RouteError,
    readonly options: { retryAfterSeconds?: number | undefined; closeConnection?: boolean } = {},
  ) {
    super(error.message);
  }
}

/** The refusal of a route's input (or of an answer the route cannot map), at the route's status for its code. */
export function inputRefusal(route: Route | null, error: RouteInputError): Refusal {
  return new Refusal(statusOfCode(route, error.code, 400), { code: error.code, message: error.message, field: error.field });
}
